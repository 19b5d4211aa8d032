"""Claims the tests build: envelopes as agents publish them, parsed claims, lines and records."""

from __future__ import annotations

from typing import Any

import orjson
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.wire.codec import loads
from claimwatch.wire.topics import TopicNames

NAMES = TopicNames("t.")
#: the default subject: the invoice of the example policy's fixtures
SUBJECT = "invoice:INV-1"
#: the default observation time: half a minute before the unit tests' NOW (tests/conftest.py)
OBSERVED_AT = "2026-09-14T09:12:00Z"


def envelope(
    claim_id: str,
    source: str,
    value: Any = None,
    *,
    subject: str = SUBJECT,
    field: str = "payment_status",
    observed_at: str | None = OBSERVED_AT,
    status: str = "ok",
    **extra: Any,
) -> dict[str, Any]:
    """A claim envelope (the JSON agents publish); a None `value` or `observed_at` is left out."""
    body: dict[str, Any] = {
        "claim_id": claim_id,
        "subject": subject,
        "field": field,
        "source": source,
    }
    if observed_at is not None:
        body["observed_at"] = observed_at
    body["status"] = status
    if value is not None:
        body["value"] = value
    body.update(extra)
    return body


def claim(claim_id: str, source: str, value: Any = None, **changes: Any) -> Claim:
    """The parsed `Claim` of `envelope(claim_id, source, value, **changes)`."""
    return claim_from_envelope(envelope(claim_id, source, value, **changes))


def claim_line(claim_id: str, source: str, value: Any = None, **changes: Any) -> bytes:
    """`envelope(claim_id, source, value, **changes)` as one compact JSON line (no newline)."""
    return orjson.dumps(envelope(claim_id, source, value, **changes))


def claim_bytes(cid: str, at_us: int) -> tuple[bytes, bytes]:
    """A payment_status claim of invoice:1 as a Kafka key and value."""
    value = claim_line(
        cid, "ledger-a", "paid", subject="invoice:1", observed_at=format_rfc3339(at_us)
    )
    return b"invoice:1|payment_status", value


def decisions(handled: list) -> list[str]:  # type: ignore[type-arg]
    """Decision ids sent to the decisions topic."""
    return [
        loads(s.value)["decision_id"]
        for h in handled
        for s in h.sends
        if s.topic == NAMES.decisions
    ]
