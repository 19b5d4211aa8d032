"""The records the claims edge writes: decisions within the record limit, conflict changes.

Also a claim's size as the core's byte budget counts it, measured with the same codec.
"""

from __future__ import annotations

from typing import Any, Final

from claimwatch.core.claim import Claim
from claimwatch.core.limits import fit_for_json
from claimwatch.core.size import canonical_bytes
from claimwatch.core.step import Decided
from claimwatch.wire.codec import dumps
from claimwatch.worker.dead_letters import DLQ_MAX_BYTES

#: Largest decision record sent (key and value), below the producer's request limit. The
#: core keeps a fact's claims within a byte budget (see claimwatch.core.size); a record past
#: this is a fault confined to its fact (decided `rejected` instead), never a crash.
MAX_RECORD_BYTES: Final = DLQ_MAX_BYTES


class RecordTooLarge(ValueError):
    """A decision record that would pass MAX_RECORD_BYTES."""


def encoded(key: bytes, record: dict[str, Any]) -> bytes:
    """A decision record's JSON; RecordTooLarge past MAX_RECORD_BYTES."""
    body = dumps(record)
    if len(key) + len(body) > MAX_RECORD_BYTES:
        raise RecordTooLarge(
            f"decision record of {len(body)} bytes exceeds the {MAX_RECORD_BYTES}-byte limit"
        )
    return body


def encoded_size(claim: Claim) -> int:
    """`core.size.claim_size` measured with the codec the records are written with."""
    try:
        raw = dumps(claim.envelope)
    except Exception:  # a number the codec does not take: measured as its text
        raw = dumps(fit_for_json(claim.envelope))
    return len(raw) + canonical_bytes(claim)


def conflict_change(decided: Decided) -> dict[str, Any] | None:
    """A record for the conflicts topic when a fact enters or leaves conflict."""
    record = decided.record
    event = decided.conflict_event
    if event is None:
        return None
    change: dict[str, Any] = {
        "event": event,
        "subject": record["subject"],
        "field": record["field"],
        "decision_id": record["decision_id"],
        "previous_decision_id": decided.previous_id,
        "at": record["decided_at"],
        "outcome": record["outcome"],
    }
    if event == "entered":
        change["conflict_kind"] = record["conflict_kind"]
        change["competing"] = record["alternatives"]
    return change
