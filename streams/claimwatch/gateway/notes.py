"""The `claimwatch` key of an arbitrated result: the decision, or why there is none.

A decided result carries `arbitrated: true` with the decision's outcome, value, action,
reason and id, and every claim the decision weighed (source, value, status, disposition).
An unarbitrated one carries `arbitrated: false`, the reason, and what became of its claim
(`claim`: one of `CLAIM_STATES`). Both name the fact (subject, field) and the claim id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

ClaimState = Literal["sent", "queued", "dropped", "refused", "not_made"]
#: What became of an unarbitrated result's claim, in words (for the log and the text block).
CLAIM_STATES: Final[dict[str, str]] = {
    "sent": "its claim was sent and will be decided when the worker reads it",
    "queued": "its claim is kept and will be sent when the broker answers again",
    "dropped": "its claim was dropped: the gateway's outbox is full",
    "refused": "its claim was refused by the worker and will never be decided",
    "not_made": "no claim could be made of it",
}


def decided_note(record: Mapping[str, Any], claim_id: str | None) -> dict[str, Any]:
    """The note of a decision record (covering the result's claim, when there is one)."""
    claims = [
        {
            "source": claim.get("source"),
            **({"value": claim["value"]} if "value" in claim else {}),
            "status": claim.get("status"),
            "disposition": claim.get("disposition"),
        }
        for claim in record.get("claims", [])
    ]
    return {
        "arbitrated": True,
        "subject": record.get("subject"),
        "field": record.get("field"),
        "claim_id": claim_id,
        "outcome": record.get("outcome"),
        "value": record.get("value"),
        "exists": record.get("exists"),
        "action": record.get("action"),
        "reason": record.get("reason"),
        "decision_id": record.get("decision_id"),
        "claims": claims,
    }


def unarbitrated_note(
    subject: str | None, field: str | None, claim_id: str | None, why: str, claim: ClaimState
) -> dict[str, Any]:
    """The note of a result no decision covers: why, and what became of its claim."""
    return {
        "arbitrated": False,
        "subject": subject,
        "field": field,
        "claim_id": claim_id,
        "reason": why,
        "claim": claim,
    }
