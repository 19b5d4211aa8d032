"""The alert record as plain JSON (see schemas/alert.py) and its deterministic id."""

from __future__ import annotations

import hashlib
from typing import Any, Final, TypedDict

#: Most decision ids an alert carries as samples.
MAX_SAMPLE_IDS: Final = 10


class Alert(TypedDict, total=False):
    """One alert; spike alerts carry the count figures, lag alerts the lag figures."""

    alert_id: str
    kind: str
    status: str
    field: str
    source: str
    previous_status: str
    window_start: str
    window_end: str
    count: int
    decisions: int
    expected: float
    p_value: float
    sources: list[dict[str, Any]]
    source_pairs: list[dict[str, Any]]
    sample_decision_ids: list[str]
    lag_seconds: dict[str, Any]
    budget_seconds: float | None
    claims: int
    dissent_ratio: float
    stale_ratio: float


def alert_id(kind: str, key: str, status: str, window_start: str) -> str:
    """A hash of kind, field (and source), status and window start: replays reproduce it."""
    digest = hashlib.sha256()
    for part in (kind, key, status, window_start):
        digest.update(part.encode())
        digest.update(b"\x1f")
    return "alr_" + digest.hexdigest()[:32]
