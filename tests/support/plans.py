"""Plan blocking records the tests build."""

from __future__ import annotations

from typing import Any


def decision(fact: str, did: str, outcome: str, action: str, at: str) -> dict[str, Any]:
    """A decision record of one fact (the fields plan blocking reads, plus the key parts)."""
    subject, _, field = fact.rpartition("|")
    return {
        "decision_id": did,
        "subject": subject,
        "field": field,
        "outcome": outcome,
        "action": action,
        "decided_at": at,
    }
