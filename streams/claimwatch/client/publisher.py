"""The agent-side publisher: validate claims with the pydantic model and send them keyed by fact."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from claimwatch.core.signing import signed
from claimwatch.models.claim import ClaimEnvelope, Decide
from claimwatch.policy.signing_keys import key_problem
from claimwatch.wire import kafka
from claimwatch.wire.codec import MAX_CLAIM_BYTES
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import TopicNames, start_for


class InvalidClaim(ValueError):
    """A claim the publisher refuses to send; the message says which key and why."""


def asking(
    claim: Mapping[str, Any] | ClaimEnvelope, decide: Decide | None
) -> Mapping[str, Any] | ClaimEnvelope:
    """`claim` with the envelope's `decide` set to `decide`, unless it names one itself.

    None leaves the claim as it is (its fact is decided when its window closes, unless the
    claim itself asks otherwise), and so is a claim that already carries a `signature`: a
    key added after signing would break it (its producer puts `decide` in before signing,
    as `mcp_adapter.claim_from_result` does).
    """
    if decide is None:
        return claim
    if isinstance(claim, ClaimEnvelope):
        if claim.decide is not None or claim.signature is not None:
            return claim
        return claim.model_copy(update={"decide": decide})
    if claim.get("decide") is not None or claim.get("signature") is not None:
        return claim
    return {**claim, "decide": decide}


def validate(
    claim: Mapping[str, Any] | ClaimEnvelope,
    signing_key: bytes | None = None,
    signing_kid: str | None = None,
) -> tuple[bytes, bytes]:
    """(key, value) of a claim after validation; signed (HMAC-SHA256) when given a key.

    `signing_kid`: the id of the key (the policy's `kid`), written into the claim as `kid`.
    A claim larger than a worker reads (`MAX_CLAIM_BYTES`, signed) is refused here: the
    worker would only dead-letter it.
    """
    try:
        model = claim if isinstance(claim, ClaimEnvelope) else ClaimEnvelope.model_validate(claim)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(p) for p in error["loc"]) or "claim"
        raise InvalidClaim(f"{key}: {error['msg']}") from None
    payload = (
        dict(claim)
        if not isinstance(claim, ClaimEnvelope)
        else model.model_dump(mode="json", exclude_none=True)
    )
    value = orjson.dumps(payload)
    if signing_key is not None:
        # sign exactly what the worker will decode: the JSON value, not the Python objects
        try:
            value = orjson.dumps(signed(orjson.loads(value), signing_key, signing_kid))
        except ValueError as exc:
            raise InvalidClaim(f"claim: cannot be signed: {exc}") from None
    if len(value) > MAX_CLAIM_BYTES:
        raise InvalidClaim(
            f"claim: {len(value)} bytes of JSON exceeds the {MAX_CLAIM_BYTES}-byte limit of a "
            "claim (a worker would dead-letter it); send a smaller value, or a reference to it"
        )
    return model.fact_key().encode(), value


class Publisher:
    """Async claim publisher (aiokafka); use as `async with Publisher() as pub:`."""

    def __init__(
        self,
        bootstrap: str | None = None,
        prefix: str | None = None,
        *,
        signing_key: bytes | None = None,
        signing_kid: str | None = None,
        **producer: Any,
    ) -> None:
        self.names = TopicNames(prefix if prefix is not None else env_prefix())
        problem = key_problem(signing_key, "signing_key") if signing_key is not None else None
        if problem is not None:
            raise ValueError(problem)
        #: when set, every claim is signed with it (the policy's `signing` key of its source)
        self.signing_key = signing_key
        #: the broker's address (`bootstrap`, else CLAIMWATCH_BOOTSTRAP, else the local one)
        self.bootstrap = bootstrap or env_bootstrap()
        #: the id of that key (the policy's `kid`), carried by every claim as `kid`
        self.signing_kid = signing_kid
        self._producer = kafka.producer(bootstrap, linger_ms=5, **producer)

    async def __aenter__(self) -> Publisher:
        """Start sending; `MissingTopic` (nothing is created) when the claims topic is absent.

        `BrokerUnavailable` at once when no broker answers at the bootstrap address.
        """
        await start_for(self._producer, self.bootstrap, self.names.prefix, [self.names.claims])
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def publish(self, claim: Mapping[str, Any] | ClaimEnvelope) -> None:
        """Validate and send one claim (buffered; `flush` or leaving the block waits)."""
        await self.send(*validate(claim, self.signing_key, self.signing_kid))

    async def send(self, key: bytes, value: bytes) -> None:
        """Send one claim as `validate` made it (key, value), without validating it again."""
        await self._producer.send(self.names.claims, value=value, key=key)

    async def publish_many(self, claims: Iterable[Mapping[str, Any]]) -> int:
        """Send several claims; returns how many were sent."""
        sent = 0
        for claim in claims:
            await self.publish(claim)
            sent += 1
        await self._producer.flush()
        return sent

    async def flush(self) -> None:
        """Wait until every buffered claim is acknowledged."""
        await self._producer.flush()
