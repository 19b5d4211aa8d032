"""Freshness: a claim is stale once the clock has passed its observation time plus the budget."""

from __future__ import annotations


def is_stale(observed_us: int, now_us: int, budget_us: int) -> bool:
    """Whether a claim observed at `observed_us` exceeds its budget at `now_us`."""
    return now_us - observed_us > budget_us


def stale_at(observed_us: int, budget_us: int) -> int:
    """The first clock time at which the claim counts as stale."""
    return observed_us + budget_us + 1
