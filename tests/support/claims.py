"""Claim records the edge tests feed, and what they read back."""

from __future__ import annotations

import orjson

from streams.core.timeutil import format_rfc3339
from streams.wire.codec import loads
from streams.wire.topics import TopicNames

NAMES = TopicNames("t.")


def claim_bytes(cid: str, at_us: int) -> tuple[bytes, bytes]:
    """A payment_status claim of invoice:1 as a Kafka key and value."""
    envelope = {
        "claim_id": cid,
        "subject": "invoice:1",
        "field": "payment_status",
        "source": "ledger-a",
        "observed_at": format_rfc3339(at_us),
        "status": "ok",
        "value": "paid",
    }
    return b"invoice:1|payment_status", orjson.dumps(envelope)


def decisions(handled: list) -> list[str]:  # type: ignore[type-arg]
    """Decision ids sent to the decisions topic."""
    return [
        loads(s.value)["decision_id"]
        for h in handled
        for s in h.sends
        if s.topic == NAMES.decisions
    ]
