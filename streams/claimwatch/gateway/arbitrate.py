"""The gateway's result hook: each mapped tool result becomes a claim, decided, and annotated.

    arbitrator = Arbitrator.from_config(config["tools"], ConfigSource(path, text, root), settings)
    async with arbitrator:
        annotated = await arbitrator(tool, arguments, result)   # a `ResultHook`

A tool without a mapping: its result is returned untouched (the same object). A mapped
tool's result is made a claim by the MCP adapter's mapping (`isError` results become error
claims, never values), signed when the mapping names a key, and decided through one
long-lived `claimwatch.Client`; the result comes back with the decision attached
(`annotate.annotated`). A call never waits longer than the decide timeout: when the
worker or the broker is down, or no decision comes in time, the result comes back with a
note saying it is unarbitrated and why. A claim that could not be handed to the broker is
kept in a bounded outbox and sent by a background task once the broker answers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from mcp.types import CallToolResult

from claimwatch.client.client import Client, DecisionTimeout
from claimwatch.client.facts import ClaimRefused, WorkerBusy, WorkerUnavailable, checked_worker_url
from claimwatch.client.mcp_adapter import MappingError, claim_from_result
from claimwatch.client.publisher import InvalidClaim, validate
from claimwatch.core.claim import fact_key
from claimwatch.gateway.annotate import annotated
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.notes import ClaimState, decided_note, unarbitrated_note
from claimwatch.gateway.opened import OpenedOnUse
from claimwatch.gateway.outbox import Courier, Outbox, Pending
from claimwatch.gateway.tools_config import GatewayToolMapping, parse_tools, signing_keys

log = logging.getLogger(__name__)

#: Seconds between two tries to hand the outbox to the broker while it does not answer.
RETRY_S: Final = 1.0
#: The longest one try to send an outbox claim may take (seconds).
SEND_TIMEOUT_S: Final = 10.0

#: Makes the (unopened) client of the settings; tests give a fake.
ClientFactory = Callable[[GatewaySettings], Client]


def _client_of(settings: GatewaySettings) -> Client:
    return Client(settings.worker_url, settings.bootstrap, settings.topic_prefix)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Arbitrator:
    """A `ResultHook`: claim, decide and annotate each mapped tool's result."""

    def __init__(
        self,
        tools: Mapping[str, GatewayToolMapping],
        settings: GatewaySettings | None = None,
        *,
        keys: Mapping[str, bytes] | None = None,
        client_factory: ClientFactory = _client_of,
        outbox: Outbox | None = None,
        clock: Callable[[], str] = _now,
    ) -> None:
        """ValueError when the worker URL is no http(s) URL (told at start, not per call)."""
        self.tools = dict(tools)
        self.settings = settings or GatewaySettings()
        if self.settings.decide_timeout <= 0:
            raise ValueError(f"decide_timeout must be positive, not {self.settings.decide_timeout}")
        checked_worker_url(self.settings.worker_url)
        self.keys = dict(keys or {})
        self._clock = clock
        self._client = OpenedOnUse(lambda: client_factory(self.settings))
        self.courier = Courier(
            self._send,
            name="claimwatch-outbox",
            retry_s=RETRY_S,
            timeout_s=SEND_TIMEOUT_S,
            outbox=outbox,
        )

    @property
    def outbox(self) -> Outbox:
        """The claims waiting for the broker."""
        return self.courier.outbox

    @classmethod
    def from_config(
        cls, tools_raw: object, source: ConfigSource, settings: GatewaySettings
    ) -> Arbitrator:
        """The arbitrator of a config's `tools:` section; MappingError names file, line, key."""
        tools = parse_tools(tools_raw, source)
        return cls(tools, settings, keys=signing_keys(tools, source))

    async def __aenter__(self) -> Arbitrator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop sending the outbox (what is left is logged) and close the client."""
        await self.courier.stop("claim(s)")
        await self._client.close()

    async def __call__(
        self, tool: str, arguments: dict[str, Any], result: CallToolResult
    ) -> CallToolResult:
        """`result` with its decision attached; untouched when `tool` has no mapping."""
        mapping = self.tools.get(tool)
        if mapping is None:
            return result
        note = await self.arbitrate(tool, mapping, arguments, result)
        return annotated(result, note, mapping.on_escalate)

    async def arbitrate(
        self,
        tool: str,
        mapping: GatewayToolMapping,
        arguments: Mapping[str, Any],
        result: CallToolResult,
    ) -> dict[str, Any]:
        """The `claimwatch` note of one result: its decision, or why it has none."""
        try:
            claim = claim_from_result(
                result,
                tool,
                mapping,
                arguments=arguments,
                now=self._clock(),
                signing_key=self.keys.get(tool),
                decide="on_arrival",  # the agent waits for no settle window
            )
            record = validate(claim)
        except (MappingError, InvalidClaim) as exc:
            log.warning("claimwatch gateway: tool %s: no claim made: %s", tool, exc)
            why = f"the result could not be made a claim: {exc}"
            return unarbitrated_note(None, mapping.field, None, why, "not_made")
        sent = orjson.loads(record[1])
        subject, field_name, claim_id = sent["subject"], sent["field"], sent["claim_id"]
        pending = Pending(claim_id, *record)

        def unarbitrated(why: str, state: ClaimState) -> dict[str, Any]:
            log.warning("claimwatch gateway: %s %s unarbitrated: %s", subject, field_name, why)
            return unarbitrated_note(subject, field_name, claim_id, why, state)

        if len(self.outbox):  # the broker did not answer last time: keep the order, do not wait
            return unarbitrated("the broker did not answer at the last try", self._queue(pending))
        timeout = self.settings.decide_timeout
        published: list[bool] = []
        try:
            async with asyncio.timeout(timeout):
                client = await self._connected()
                decided = await client.decide(
                    [sent], timeout=timeout, on_sent=lambda: published.append(True)
                )
        except WorkerUnavailable as exc:  # told before publishing: nothing was sent
            return unarbitrated(str(exc), self._queue(pending))
        except DecisionTimeout as exc:
            return unarbitrated(str(exc), "sent")
        except ClaimRefused as exc:
            return unarbitrated(f"the worker refused the claim: {exc}", "refused")
        except WorkerBusy as exc:
            return unarbitrated(str(exc), "sent")
        except TimeoutError:
            why = f"no decision within the decide timeout ({timeout:g} s)"
            if published:  # the broker has it: the worker decides it when it answers again
                return unarbitrated(f"{why}; the worker did not answer in time", "sent")
            return unarbitrated(why, self._queue(pending))  # not sent: the outbox sends it
        except Exception as exc:  # the broker: unreachable, its topics missing, a send failed
            log.debug("claimwatch gateway: decide failed", exc_info=True)
            return unarbitrated(f"{type(exc).__name__}: {exc}", self._queue(pending))
        return decided_note(decided[fact_key(subject, field_name)], claim_id)

    async def _connected(self) -> Client:
        """The one client, opened on first use (and again after an open that failed)."""
        return await self._client.get()

    def _queue(self, pending: Pending) -> ClaimState:
        """Keep a claim for the broker and make sure it is being sent; `dropped` when full."""
        if not self.courier.keep(pending):
            log.error(
                "claimwatch gateway: outbox full (%d claims): claim %s dropped",
                self.outbox.size,
                pending.claim_id,
            )
            return "dropped"
        return "queued"

    async def _send(self, pending: Pending) -> None:
        client = await self._connected()
        await client.publisher.send(pending.key, pending.value)
        await client.publisher.flush()
