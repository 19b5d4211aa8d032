"""A claim as the core sees it: the envelope as received plus its parsed essentials."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from streams.core.timeutil import TimestampError, parse_rfc3339

#: Keys without which a message is not a claim at all (it goes to the dead-letter topic).
REQUIRED_KEYS: Final = ("claim_id", "subject", "field", "source")
MAX_CLAIM_ID: Final = 128


class EnvelopeError(ValueError):
    """A message that is not a claim: it cannot be attributed to a fact."""


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim. `observed_us` is None when the time was missing or unparseable.

    `arrival_error` is set by the stream processor when the claim was refused on arrival
    (for example, too far ahead of the partition clock): it then stays rejected.
    """

    claim_id: str
    subject: str
    field: str
    source: str
    observed_us: int | None
    time_error: str | None
    status: object
    envelope: Mapping[str, Any]
    arrival_error: str | None = None

    @property
    def fact_key(self) -> str:
        return f"{self.subject}|{self.field}"

    @property
    def has_value(self) -> bool:
        return "value" in self.envelope

    @property
    def value(self) -> Any:
        return self.envelope.get("value")


def fact_key(subject: str, field: str) -> str:
    """The key of a fact, as used for Kafka messages and state."""
    return f"{subject}|{field}"


def claim_from_envelope(envelope: Mapping[str, Any]) -> Claim:
    """Build a Claim, or raise EnvelopeError when the message cannot be attributed to a fact.

    Contract problems (bad time, status or value) do not raise: they are judged per field
    by the resolution, so the claim is still recorded as rejected in its fact's decision.
    """
    if not isinstance(envelope, Mapping):
        raise EnvelopeError(f"a claim must be a JSON object, got {type(envelope).__name__}")
    for key in REQUIRED_KEYS:
        raw = envelope.get(key)
        if raw is None:
            raise EnvelopeError(f"missing required key `{key}`")
        if not isinstance(raw, str) or not raw:
            raise EnvelopeError(f"`{key}` must be a non-empty string, got {raw!r}")
    claim_id: str = envelope["claim_id"]
    if len(claim_id) > MAX_CLAIM_ID:
        raise EnvelopeError(f"`claim_id` is longer than {MAX_CLAIM_ID} characters")
    observed_us: int | None
    time_error: str | None = None
    if "observed_at" not in envelope or envelope["observed_at"] is None:
        observed_us, time_error = None, "missing `observed_at`"
    else:
        try:
            observed_us = parse_rfc3339(envelope["observed_at"])
        except TimestampError as exc:
            observed_us, time_error = None, f"`observed_at`: {exc}"
    return Claim(
        claim_id=claim_id,
        subject=envelope["subject"],
        field=envelope["field"],
        source=envelope["source"],
        observed_us=observed_us,
        time_error=time_error,
        status=envelope.get("status"),
        envelope=envelope,
    )
