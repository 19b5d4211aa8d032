"""Counts tallied over a batch reach their series at the flush, summed, none lost or doubled."""

from __future__ import annotations

from claimwatch.worker.metrics import Metrics, Tally
from hypothesis import given
from hypothesis import strategies as st

from tests.support.policies import policy_with

OUTCOMES = ["resolved", "conflict", "insufficient"]


def _decisions(metrics: Metrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value(
        "claimwatch_decisions_total", {"field": "payment_status", "outcome": outcome}
    )
    return value or 0.0


@given(batches=st.lists(st.lists(st.sampled_from(OUTCOMES), max_size=30), max_size=6))
def test_tallied_counts_equal_direct_counts_after_each_flush(batches: list[list[str]]) -> None:
    """After each flush every series holds what counting each increment at once gives."""
    tallied, direct, tally = Metrics(policy_with()), Metrics(policy_with()), Tally()
    for batch in batches:
        for outcome in batch:
            tally.add(tallied.decisions, "payment_status", outcome)
            direct.decisions.labels("payment_status", outcome).inc()
        tally.flush()
        expected = {o: _decisions(direct, o) for o in OUTCOMES}
        assert expected == {o: _decisions(tallied, o) for o in OUTCOMES}


def test_nothing_reaches_a_series_before_the_flush() -> None:
    """Deferred: a scrape mid-batch sees the counts of the batches before."""
    metrics, tally = Metrics(policy_with()), Tally()
    tally.add(metrics.decisions, "payment_status", "resolved")
    assert 0.0 == _decisions(metrics, "resolved")
    tally.flush()
    tally.flush()  # a second flush adds nothing again
    assert 1.0 == _decisions(metrics, "resolved")
