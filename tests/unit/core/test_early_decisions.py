"""Decisions on arrival: a claim asking `"decide": "on_arrival"` has its fact decided at once.

The window stays open: later claims in it are merged, and its close decides as it would
have without the early decision (emitted when its id differs from the early one).
"""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.processor import PartitionProcessor, StepResult
from claimwatch.core.resolve import resolve
from claimwatch.core.state import FactState
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

EARLY = {"decide": "on_arrival"}
MUST = "`decide` must be one of on_arrival, window or null,"


def claim(cid: str, source: str, value: str, at_us: int, **extra: Any) -> Claim:
    """A payment_status claim of invoice:1 observed at `at_us`."""
    at = format_rfc3339(at_us)
    return claim_from_envelope(
        envelope(cid, source, value, subject="invoice:1", observed_at=at, **extra)
    )


def records(results: list[StepResult]) -> list[dict[str, Any]]:
    """Every decision record emitted, in order."""
    return [d.record for r in results for d in r.decisions]


def summary(results: list[StepResult]) -> list[tuple[str, Any, list[str], str]]:
    """(outcome, value, claim ids listed, decided_at) of every decision, in order."""
    return [
        (r["outcome"], r["value"], [c["claim_id"] for c in r["claims"]], r["decided_at"])
        for r in records(results)
    ]


def a_change_seen_300ms_apart(first: dict[str, Any], second: dict[str, Any]) -> list[Claim]:
    """Two owners queried 300 ms apart around a change, then nothing."""
    return [
        claim("1", "ledger-a", "unpaid", T0, **first),
        claim("2", "ledger-b", "paid", T0 + 300_000, **second),
    ]


def run(
    claims: list[Claim], *, judge_arrivals: bool = True, settle: str = "2s"
) -> list[StepResult]:
    """The claims through one partition's step, then a tick past every window."""
    proc = PartitionProcessor(policy_with(settle=settle), 0, {}, judge_arrivals=judge_arrivals)
    steps = [proc.on_claim(c) for c in claims]
    steps.append(proc.on_tick(T0 + 10 * SECOND))
    return steps


def test_a_claim_asking_for_it_is_decided_at_its_arrival() -> None:
    """The fact is decided on the claim's arrival, stamped with the clock of that moment."""
    proc = PartitionProcessor(policy_with(settle="2s"), 0, {})
    step = proc.on_claim(claim("1", "ledger-a", "paid", T0, **EARLY))
    assert [("resolved", "paid", ["1"], format_rfc3339(T0))] == summary([step])


def test_without_the_key_the_fact_waits_for_its_window() -> None:
    """No `decide` key (or `window`): nothing is decided before the window closes."""
    proc = PartitionProcessor(policy_with(settle="2s"), 0, {})
    steps = [
        proc.on_claim(claim("1", "ledger-a", "paid", T0)),
        proc.on_claim(claim("2", "ledger-b", "paid", T0, decide="window")),
    ]
    assert [] == summary(steps)
    closed = proc.on_tick(T0 + 2 * SECOND)
    assert [("resolved", "paid", ["1", "2"], format_rfc3339(T0 + 2 * SECOND))] == summary([closed])


def test_a_later_claim_in_the_window_gives_the_usual_decision_at_its_close() -> None:
    """Early: resolved on the first claim; the close: the conflict a window alone decides."""
    early = run(a_change_seen_300ms_apart(EARLY, {}))
    usual = run(a_change_seen_300ms_apart({}, {}))
    close = format_rfc3339(T0 + 300_000 + 2 * SECOND)
    assert [
        ("resolved", "unpaid", ["1"], format_rfc3339(T0)),
        ("conflict", None, ["1", "2"], close),
    ] == summary(early)
    # the window's decision is the one it makes without an early decision: same record
    # but for the claim that asked (its envelope carries the key), same outcome and ids
    assert [("conflict", None, ["1", "2"], close)] == summary(usual)
    assert {"1": "contradicting", "2": "contradicting"} == {
        c["claim_id"]: c["disposition"] for c in records(early)[-1]["claims"]
    }


def test_the_close_sends_nothing_when_it_decides_as_the_early_decision_did() -> None:
    """No later claim: the window's decision has the early one's id, so it is not sent again."""
    steps = run([claim("1", "ledger-a", "paid", T0, **EARLY)])
    assert [("resolved", "paid", ["1"], format_rfc3339(T0))] == summary(steps)


def test_each_claim_asking_decides_again_on_all_that_has_arrived() -> None:
    """Two claims asking, 300 ms apart: two early decisions, the second over both claims."""
    steps = run(a_change_seen_300ms_apart(EARLY, EARLY))
    assert [
        ("resolved", "unpaid", ["1"], format_rfc3339(T0)),
        ("conflict", None, ["1", "2"], format_rfc3339(T0 + 300_000)),
    ] == summary(steps)


def test_early_decision_ids_are_deterministic_and_those_of_resolve() -> None:
    """The same input gives the same ids; each is `resolve`'s on the same claims and time."""
    claims = a_change_seen_300ms_apart(EARLY, {})
    first, second = run(claims), run(a_change_seen_300ms_apart(EARLY, {}))
    ids = [r["decision_id"] for r in records(first)]
    assert ids == [r["decision_id"] for r in records(second)]
    assert resolve(claims[:1], policy_with(settle="2s"), T0)["decision_id"] == ids[0]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("settle", ["0s", "2s"])
@pytest.mark.parametrize(("first", "second"), [(EARLY, {}), ({}, EARLY), (EARLY, EARLY), ({}, {})])
def test_a_replay_decides_as_the_live_step(
    settle: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    """Without arrival checks (as a replay runs), the same decisions, ids and times."""
    live = run(a_change_seen_300ms_apart(first, second), settle=settle)
    replay = run(a_change_seen_300ms_apart(first, second), judge_arrivals=False, settle=settle)
    assert records(live) == records(replay)


def test_at_settle_zero_the_early_decision_is_the_only_one() -> None:
    """Settle 0 decides on every claim anyway: asking adds no second decision."""
    steps = run([claim("1", "ledger-a", "paid", T0, **EARLY)], settle="0s")
    assert [("resolved", "paid", ["1"], format_rfc3339(T0))] == summary(steps)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("soon", f"{MUST} got string 'soon'"),
        (True, f"{MUST} got boolean true"),
        (["on_arrival"], f"{MUST} got an array of 1 item(s)"),
    ],
)
def test_a_wrong_decide_value_breaks_the_contract(value: Any, reason: str) -> None:
    """Rejected (dead-lettered with the reason at once), decided when the window closes."""
    proc = PartitionProcessor(policy_with(settle="2s"), 0, {})
    arrived = proc.on_claim(claim("1", "ledger-a", "paid", T0, decide=value))
    assert ([], [reason]) == (summary([arrived]), arrived.dead_letters)
    closed = proc.on_tick(T0 + 2 * SECOND)
    (record,) = records([closed])
    assert ("rejected", reason) == (record["outcome"], record["claims"][0]["error"])


def test_the_key_survives_the_stored_state() -> None:
    """A fact restored from its changelog form still holds a claim that asked."""
    state = FactState("invoice:1", "payment_status", 0)
    state.claims.append(claim("1", "ledger-a", "paid", T0, **EARLY))
    restored = FactState.from_obj(state.to_obj())
    assert [True] == [c.on_arrival for c in restored.claims]
