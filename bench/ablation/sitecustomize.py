"""Ablations of the worker for `bench.ablate`: parts of its work switched off, by name.

Python imports `sitecustomize` at start-up from the path; `bench.ablate` puts this folder
first on the worker's PYTHONPATH and names the parts in `CLAIMWATCH_ABLATE` (a comma
list). Each part is replaced by the least that keeps the worker running, so the run shows
what that part costs a claim. Never on a worker that anyone reads: an ablated worker makes
wrong records (no lag samples, ids that a replay does not reproduce, no reasons).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import claimwatch.core.processor
import claimwatch.core.resolve
import claimwatch.worker.claims.agents
from claimwatch.core.claim import fact_key

#: name -> what it switches off
PARTS = {
    "lag": "the replica-lag detector's per-fact half (no observations, no track in the state)",
    "metrics": "the claims agent's counting of claims and decisions for Prometheus",
    "ids": "SHA-256 decision ids (Python's own hash of the same pairs instead)",
    "reason": "the decision's one-line reason (left empty)",
}


def _no_lag(
    policy: Any, track: Any, decision: Any, previous: Any, now: int, resolved: Any = None
) -> Any:
    return track, (now, fact_key(decision["subject"], decision["field"]), None, None)


def _hashed_id(version: str, fact: str, pairs: list[tuple[str, str]]) -> str:
    return "dec_%016x" % (hash((version, fact, *sorted(pairs))) & 0xFFFFFFFFFFFFFFFF)


def _no_count(metrics: Any, handled: Any, tally: Any) -> None:
    return None


def _no_reason(record: Any, freshness_us: int, settled: Any) -> str:
    return ""


def apply(names: set[str]) -> None:
    """Switch off the named parts in this process (they must be in PARTS)."""
    if "lag" in names:
        setattr(claimwatch.core.processor, "entry_of", _no_lag)  # noqa: B010
    if "metrics" in names:
        setattr(claimwatch.worker.claims.agents, "_count", _no_count)  # noqa: B010
    if "ids" in names:
        setattr(claimwatch.core.resolve, "decision_id", _hashed_id)  # noqa: B010
    if "reason" in names:
        setattr(claimwatch.core.resolve, "reason_for", _no_reason)  # noqa: B010


_named = {n.strip() for n in os.environ.get("CLAIMWATCH_ABLATE", "").split(",") if n.strip()}
if _named - PARTS.keys():
    unknown = ", ".join(sorted(_named - PARTS.keys()))
    known = ", ".join(PARTS)
    print(f"CLAIMWATCH_ABLATE: unknown part(s) {unknown}; known: {known}", file=sys.stderr)
    os._exit(2)  # (SystemExit while the site module imports this is a fatal error)
apply(_named)
