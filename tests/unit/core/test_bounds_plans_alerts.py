"""Bounds of plan blocking and the detectors (issue 40, item 9): state and work per record."""

from __future__ import annotations

import time

import pytest
from claimwatch.core.alerts.entry import MAX_SOURCES_PER_ENTRY, EntryError, entry_from_obj
from claimwatch.core.alerts.spike import ConflictSpike, SpikeState
from claimwatch.core.plan_facts import MAX_PLANS_PER_FACT, on_interest
from claimwatch.core.plans import MAX_PLAN_FACTS, Plan, Step, rejected


def spike_cost(sources: int) -> float:
    """Seconds to count one decision entering conflict with `sources` differing sources."""
    entering = ("dec_1", {f"s{i:06d}": f"{i:016x}" for i in range(sources)})
    detector = ConflictSpike()
    started = time.perf_counter()
    detector.take(SpikeState("f"), entering, 1_000_000)
    return time.perf_counter() - started


def test_a_decision_costs_the_spike_detector_linear_work_in_its_sources() -> None:
    """2,500 and 20,000 sources: well under a second (a pair walk took ~200M steps).

    The pair walk grew 64-fold from N to 8N; a linear count grows about 8-fold (sorting
    and cache effects put it between 8 and 16 here), so the ratio is held below 32.
    """
    spike_cost(1000)  # warm up
    small = min(spike_cost(2500) for _ in range(5))
    large = min(spike_cost(20000) for _ in range(5))
    assert large < 0.5 and large < 32 * small, (small, large)


def test_the_pairs_past_the_named_ones_are_counted_as_other() -> None:
    """Every differing pair is counted once, by name or as `other`."""
    digests = {f"s{i:02d}": str(i % 3) for i in range(40)}
    state, _ = ConflictSpike().take(SpikeState("f"), ("d", digests), 1)
    same = sum(g * (g - 1) // 2 for g in (14, 13, 13))
    assert 40 * 39 // 2 - same == sum(state.pairs.values())


def test_an_entry_with_too_many_sources_does_not_validate() -> None:
    """The alerts input is checked like a public topic."""
    digests = {f"s{i}": "x" for i in range(MAX_SOURCES_PER_ENTRY + 1)}
    with pytest.raises(EntryError, match="contradicting sources"):
        entry_from_obj([1, "a|f", ["d", digests], None])


@pytest.mark.parametrize(
    "obj",
    [[1, "a|f", None], ["1", "a|f", None, None], [1, "", None, None], [1, "a|f", None, [[1]]]],
)
def test_a_malformed_entry_does_not_validate(obj: object) -> None:
    """Wrong shapes and types raise EntryError (a ValueError), never anything else."""
    with pytest.raises(EntryError):
        entry_from_obj(obj)


def test_a_plan_past_the_plans_per_fact_bound_is_refused_with_a_reason() -> None:
    """The fact's state keeps at most MAX_PLANS_PER_FACT plan ids; the next is refused."""
    state = None
    for i in range(MAX_PLANS_PER_FACT):
        state, _ = on_interest(state, "a|f", "add", f"p{i}")
    assert state is not None
    state, notices = on_interest(state, "a|f", "add", "late")
    assert MAX_PLANS_PER_FACT == len(state.plans)
    assert notices[0].refused is not None and "plan_limit" in notices[0].refused
    _, notices = on_interest(state, "a|f", "add", "p0")  # a registered plan asks again
    assert notices[0].refused is None


def test_a_plan_past_its_bounds_names_the_bound_and_every_step_is_rejected() -> None:
    """Too many distinct facts: the reason says so; each step is `rejected` with it."""
    reads = [f"s{i}|f" for i in range(MAX_PLAN_FACTS + 1)]
    steps = tuple(Step.of(f"st{i}", reads[i * 60 : (i + 1) * 60]) for i in range(9))
    plan = Plan("p", steps)
    reason = plan.bound_problem()
    assert reason is not None and "distinct facts" in reason
    statuses = rejected(plan, reason)
    assert {"rejected"} == {s.status for s in statuses}
    assert reason == statuses[0].to_record()["reason"]
