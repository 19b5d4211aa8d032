"""The partition step: clock, decision windows, expiry on ticks, dedupe and bounded state."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor, StepResult
from claimwatch.core.prune import MAX_SEEN_PER_FACT
from claimwatch.core.state import FactState
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with


def claim(cid: str, source: str, value: str, at_us: int, **extra: Any) -> Claim:
    """A payment_status claim of invoice:1 (the one fact of these tests) observed at `at_us`."""
    at = format_rfc3339(at_us)
    return claim_from_envelope(
        envelope(cid, source, value, subject="invoice:1", observed_at=at, **extra)
    )


def outcomes(results: list[StepResult]) -> list[tuple[str, Any]]:
    """(outcome, value) of every decision emitted, in order."""
    return [(d.record["outcome"], d.record["value"]) for r in results for d in r.decisions]


def test_default_settle_hides_a_change_seen_300ms_apart() -> None:
    """Two owners queried 300 ms apart around a change give no conflict with settle 2s."""
    proc = PartitionProcessor(policy_with(), 0, {})
    steps = [
        proc.on_claim(claim("1", "ledger-a", "unpaid", T0)),
        proc.on_claim(claim("2", "ledger-b", "unpaid", T0)),
        proc.on_tick(T0 + 9 * SECOND),
        proc.on_claim(claim("3", "ledger-a", "paid", T0 + 10 * SECOND)),
        proc.on_claim(claim("4", "ledger-b", "paid", T0 + 10 * SECOND + 300_000)),
        proc.on_tick(T0 + 15 * SECOND),
    ]
    assert [("resolved", "unpaid"), ("resolved", "paid")] == outcomes(steps)


def test_settle_zero_shows_the_transient_conflict() -> None:
    """With settle 0 every claim is decided at once, so the change looks like a conflict."""
    proc = PartitionProcessor(policy_with(settle="0s"), 0, {})
    steps = [
        proc.on_claim(claim("1", "ledger-a", "unpaid", T0)),
        proc.on_claim(claim("2", "ledger-b", "unpaid", T0)),
        proc.on_tick(T0 + 9 * SECOND),
        proc.on_claim(claim("3", "ledger-a", "paid", T0 + 10 * SECOND)),
        proc.on_claim(claim("4", "ledger-b", "paid", T0 + 10 * SECOND + 300_000)),
    ]
    assert [
        ("resolved", "unpaid"),
        ("resolved", "unpaid"),
        ("conflict", None),
        ("resolved", "paid"),
    ] == outcomes(steps)


def test_window_closes_at_max_delay_under_steady_traffic() -> None:
    """A window that keeps receiving claims still closes max_delay after it opened."""
    proc = PartitionProcessor(policy_with(settle="2s", max_delay="5s"), 0, {})
    results = [proc.on_claim(claim(str(i), "ledger-a", "paid", T0 + i * SECOND)) for i in range(8)]
    decided = [d.record["decided_at"] for r in results for d in r.decisions]
    assert [format_rfc3339(T0 + 5 * SECOND)] == decided


def test_fact_turns_insufficient_on_ticks_alone() -> None:
    """When the clock passes the freshness budget, a tick re-decides the fact as insufficient."""
    proc = PartitionProcessor(policy_with(), 0, {})
    first = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    ticks = [proc.on_tick(T0 + s * SECOND) for s in (1, 3, 30, 61)]
    assert [("resolved", "paid"), ("insufficient", None)] == outcomes([first, *ticks])
    stale = ticks[-1].decisions[0].record
    assert format_rfc3339(T0 + 60 * SECOND + 1) == stale["decided_at"]


def test_redelivery_is_ignored_and_a_forged_reuse_goes_to_the_dlq() -> None:
    """Same claim id and content: ignored; same id, other content: DLQ, never marked seen."""
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy_with(settle="0s"), 0, facts)
    proc.on_claim(claim("1", "ledger-a", "paid", T0))
    again = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    forged = proc.on_claim(claim("1", "ledger-a", "unpaid", T0))
    assert (["duplicate"], []) == (again.events, again.dead_letters)
    assert ["conflicting_duplicate"] == forged.events
    assert 1 == len(forged.dead_letters)
    assert 1 == len(facts["invoice:1|payment_status"].claims)


class _Written(dict[str, FactState]):
    """A fact store that remembers which keys were written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def __setitem__(self, key: str, state: FactState) -> None:
        self.writes.append(key)
        super().__setitem__(key, state)


@pytest.mark.parametrize("pruned", [False, True])
def test_a_redelivered_claim_writes_its_fact_again(pruned: bool) -> None:
    """A redelivery rewrites the fact as it is: a store ahead of its changelog gives it back.

    A worker killed after writing its store but before the changelog record left keeps the
    claim locally; its input is read again and the claim is a redelivery. Without this
    write the changelog would never hold the claim, and a later restore from it would lose
    it. Live or already pruned to the seen ids (`pruned`), the state written is unchanged.
    """
    facts = _Written()
    policy = policy_with(settle="0s", freshness="until_edited")
    proc = PartitionProcessor(policy, 0, facts)
    proc.on_claim(claim("1", "ledger-a", "paid", T0))
    if pruned:  # a newer claim of the same source replaces it (its id is kept as seen)
        proc.on_claim(claim("2", "ledger-a", "paid", T0 + 5 * SECOND))
    state = facts["invoice:1|payment_status"]
    assert (["2"] if pruned else ["1"]) == [c.claim_id for c in state.claims]
    before = state.to_obj()
    facts.writes.clear()
    again = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    assert (["duplicate"], ["invoice:1|payment_status"]) == (again.events, facts.writes)
    assert before == facts["invoice:1|payment_status"].to_obj()


def test_claim_far_ahead_of_the_clock_is_rejected_and_does_not_move_it() -> None:
    """A claim more than clock_skew ahead is rejected, copied to the DLQ, clock unchanged."""
    proc = PartitionProcessor(policy_with(settle="0s"), 0, {})
    proc.on_claim(claim("1", "ledger-a", "paid", T0))
    ahead = proc.on_claim(claim("2", "ledger-b", "paid", T0 + 60 * SECOND))
    assert T0 == proc.clock_us
    assert "ahead of the partition clock" in ahead.dead_letters[0]
    record = ahead.decisions[0].record
    assert "rejected" == next(c for c in record["claims"] if c["claim_id"] == "2")["disposition"]


@pytest.mark.parametrize(
    ("judge", "events", "dead_letters"),
    [(True, ["accepted", "rejected"], 1), (False, ["kept", "kept"], 0)],
)
def test_a_step_that_does_not_judge_arrivals_makes_the_same_decisions(
    judge: bool, events: list[str], dead_letters: int
) -> None:
    """Unjudged arrivals (replay) are counted `kept`, not dead-lettered, and decided alike."""
    proc = PartitionProcessor(policy_with(settle="0s"), 0, {}, judge_arrivals=judge)
    good = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    bad = proc.on_claim(claim("2", "ledger-b", "sideways", T0))
    assert (events, dead_letters) == (good.events + bad.events, len(bad.dead_letters))
    record = bad.decisions[0].record
    assert ("resolved", "rejected") == (
        record["outcome"],
        next(c for c in record["claims"] if c["claim_id"] == "2")["disposition"],
    )


def test_unchanged_decision_is_not_emitted_again() -> None:
    """A window that ends with the same dispositions emits nothing (same decision id)."""
    proc = PartitionProcessor(policy_with(settle="0s"), 0, {})
    first = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    again = proc.on_claim(claim("1", "ledger-a", "paid", T0))
    assert (1, 0) == (len(first.decisions), len(again.decisions))


def test_state_roundtrips_and_stays_under_a_kibibyte() -> None:
    """A decided fact with five claims (and its detectors' track) stays below 1 KiB."""
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy_with(), 3, facts, alerts=True)
    for i, source in enumerate(["ledger-a", "ledger-b", "cache", "ledger-a", "ledger-b"]):
        proc.on_claim(
            claim(
                f"claim-{i:06d}",
                source,
                "paid",
                T0 + i * 100_000,
                trace_id=f"trace-{i:04d}",
                agent_id="agent-7",
            )
        )
    proc.flush()
    state = facts["invoice:1|payment_status"]
    assert state.track is not None
    raw = orjson.dumps(state.to_obj())
    assert len(raw) < 1024, len(raw)
    restored = FactState.from_obj(orjson.loads(raw))
    assert state.to_obj() == restored.to_obj()
    twin: dict[str, FactState] = {"invoice:1|payment_status": restored}
    copy = PartitionProcessor(policy_with(), 3, twin, clock_us=proc.clock_us)
    copy.rebuild(twin.values())
    assert outcomes([proc.on_tick(T0 + 10 * SECOND)]) == outcomes([copy.on_tick(T0 + 10 * SECOND)])


@pytest.mark.parametrize("limit", [1, 2])
def test_lineages_are_capped(limit: int) -> None:
    """Beyond max_lineages the lineage with the oldest newest claim no longer votes.

    Until a decision lists them the others stay, out of the running (`superseded`).
    """
    base = policy_with().policy
    capped = CompiledPolicy(
        base.model_copy(
            update={
                "defaults": base.defaults.model_copy(update={"max_lineages": limit}),
            }
        )
    )
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(capped, 0, facts)
    for i in range(4):
        proc.on_claim(claim(str(i), f"src-{i}", "paid", T0 + i * SECOND))
    claims = facts["invoice:1|payment_status"].claims
    kept = {c.source for c in claims if c.superseded is None}
    assert {f"src-{i}" for i in range(4 - limit, 4)} == kept
    assert {f"src-{i}" for i in range(4 - limit)} == {c.source for c in claims if c.superseded}


def test_flush_closes_open_windows_without_expiring() -> None:
    """At the end of a file the open windows are decided at their deadlines, nothing expires."""
    proc = PartitionProcessor(policy_with(), 0, {})
    proc.on_claim(claim("1", "ledger-a", "paid", T0))
    flushed = proc.flush()
    assert [("resolved", "paid")] == outcomes([flushed])
    assert format_rfc3339(T0 + 2 * SECOND) == flushed.decisions[0].record["decided_at"]
    assert [] == proc.flush().decisions


@pytest.mark.parametrize("most", [1, 3, 7, 100])
def test_flush_in_parts_decides_what_one_flush_decides(most: int) -> None:
    """`flush_in(most)`: the same decisions as `flush`, in order, at most `most` a part."""

    def fed() -> PartitionProcessor:
        proc = PartitionProcessor(policy_with(), 0, {})
        for i in range(20):
            at = format_rfc3339(T0 + i * 1000)
            for source, value in (
                ("ledger-a", "paid"),
                ("ledger-b", "unpaid" if i % 3 else "paid"),
            ):
                sent = envelope(
                    f"{i}{source}", source, value, subject=f"invoice:{i}", observed_at=at
                )
                proc.on_claim(claim_from_envelope(sent))
        return proc

    whole = [d.record for d in fed().flush().decisions]
    parts = list(fed().flush_in(most))
    assert 20 == len(whole)
    assert whole == [d.record for part in parts for d in part.decisions]
    assert all(len(part.decisions) <= most for part in parts)


def test_a_seen_id_is_forgotten_once_past_the_horizon_even_when_no_claim_is_dropped() -> None:
    """An id kept as seen goes at the first prune past its horizon, a claim dropped or not."""
    facts: dict[str, FactState] = {}
    policy = policy_with(settle="0s")  # freshness 60 s, grace 30 s: a 90 s horizon
    cap = policy.policy.defaults.max_lineages
    proc = PartitionProcessor(policy, 0, facts)
    proc.on_claim(claim("old", "src-0", "paid", T0))
    proc.on_tick(T0 + 60 * SECOND)
    for n in range(1, cap + 1):  # one lineage too many: the oldest one's claim is dropped
        proc.on_claim(claim(f"c{n}", f"src-{n}", "paid", T0 + 60 * SECOND))
    state = facts["invoice:1|payment_status"]
    assert (cap, ["old"]) == (len(state.claims), list(state.seen))
    proc.on_tick(T0 + 95 * SECOND)  # "old" is past the horizon, the others are not
    proc.on_claim(claim("new", "src-1", "paid", T0 + 95 * SECOND))  # drops no claim
    state = facts["invoice:1|payment_status"]
    assert (cap + 1, []) == (len(state.claims), list(state.seen))


def test_the_seen_ids_of_a_fact_stay_within_their_bound() -> None:
    """However many claims a source replaces, a fact remembers MAX_SEEN_PER_FACT ids."""
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy_with(settle="0s", freshness="until_edited"), 0, facts)
    for n in range(MAX_SEEN_PER_FACT + 40):
        proc.on_claim(claim(f"c{n:04d}", "ledger-a", "paid", T0 + n * 1000))
    state = facts["invoice:1|payment_status"]
    kept = [f"c{n:04d}" for n in range(39, MAX_SEEN_PER_FACT + 39)]  # the newest replaced
    assert (1, kept) == (len(state.claims), list(state.seen))


class CountingProcessor(PartitionProcessor):
    """A processor that counts the prunes it makes (those that look at the claims)."""

    prunes = 0

    def _drop(self, state: FactState, rule: Any, now: int) -> None:
        self.prunes += 1
        super()._drop(state, rule, now)


@pytest.mark.parametrize(
    ("freshness", "sources", "expected_prunes", "kept"),
    [
        # the horizon stands still and no cap is near: the first claim's prune serves the
        # others; the decision, at the window's deadline, prunes once more
        ("5m", "aaaaa", 2, 6),
        # each claim replaces its source's older one: pruned at every claim
        ("until_edited", "aaaaa", 7, 1),
        # a claim beside no other of its source (the first claim's is `a`) replaces none:
        # no prune for it
        ("until_edited", "abcde", 3, 5),
        ("until_edited", "abcaa", 5, 3),
    ],
)
def test_a_fact_whose_clock_stands_still_is_pruned_when_something_may_drop(
    freshness: str, sources: str, expected_prunes: int, kept: int
) -> None:
    """Claims added while the partition clock stands still are pruned when they can drop one.

    `kept`: the claims that still vote; the superseded ones are listed too, `stale`.
    """
    proc = CountingProcessor(policy_with(settle="2s", freshness=freshness), 0, {})
    proc.on_claim(claim("lead", "ledger-a", "paid", T0 + 10 * SECOND))  # the clock's high mark
    steps = [
        proc.on_claim(claim(str(n), f"ledger-{source}", "paid", T0 + n * SECOND))
        for n, source in enumerate(sources)
    ]
    steps.extend(proc.flush_in(100))
    listed = steps[-1].decisions[0].record["claims"]
    assert (expected_prunes, kept, 6) == (
        proc.prunes,
        len([c for c in listed if c["disposition"] != "stale"]),
        len(listed),
    )


def test_a_fact_decided_when_its_claim_arrives_is_pruned_once() -> None:
    """At settle 0 the claim's own prune serves its decision: no second prune, same record."""
    proc = CountingProcessor(policy_with(settle="0s"), 0, {})
    steps = [proc.on_claim(claim(str(n), "ledger-a", "paid", T0 + n * SECOND)) for n in range(6)]
    assert 6 == proc.prunes
    assert [("resolved", "paid")] == outcomes(steps)[:1]
