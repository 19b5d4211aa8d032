"""Plan blocking, pure core: step statuses, the plan book state machine, and its invariants."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.plan_facts import FactInterest, on_fact_decision, on_interest
from claimwatch.core.plans import (
    DecisionView,
    Plan,
    PlanBook,
    PlanError,
    Step,
    evaluate,
    on_decision,
    on_plan,
    on_remove,
    statuses,
    step_status,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PAY = "inv-1|payment_status"
BAL = "inv-1|balance"
SHIP = "inv-2|shipping_address"


def record(did: str, outcome: str, action: str, at: str = "2026-09-14T09:12:00Z") -> dict[str, Any]:
    """A decision record with the fields a step status reads."""
    return {"decision_id": did, "outcome": outcome, "action": action, "decided_at": at}


def view(did: str, outcome: str, action: str, us: int | None = None) -> DecisionView:
    """A decision view."""
    return DecisionView(did, outcome, action, us)


REFUND = Step.of("refund", [PAY], irreversible=True)
EMAIL = Step.of("email", [PAY, SHIP], irreversible=False)


@pytest.mark.parametrize(
    ("outcome", "action", "irreversible", "expected"),
    [
        ("resolved", "proceed", True, "runnable"),
        ("resolved", "escalate", True, "blocked"),  # won by a user's assertion
        ("resolved", "degrade", True, "blocked"),
        ("conflict", "escalate", True, "blocked"),
        ("conflict", "degrade", True, "blocked"),
        ("insufficient", "degrade", True, "blocked"),
        ("rejected", "escalate", True, "blocked"),
        ("resolved", "proceed", False, "runnable"),
        ("resolved", "degrade", False, "runnable"),
        ("conflict", "degrade", False, "runnable"),
        ("insufficient", "degrade", False, "runnable"),
        ("conflict", "escalate", False, "blocked"),
        ("rejected", "escalate", False, "blocked"),
    ],
)
def test_which_decisions_permit_a_step(
    outcome: str, action: str, irreversible: bool, expected: str
) -> None:
    """Irreversible steps run on `proceed` only; reversible ones also on `degrade`."""
    step = Step.of("s", [PAY], irreversible)
    status = step_status(step, {PAY: record("dec_1", outcome, action)})
    assert expected == status.status
    assert (("dec_1",) if expected == "blocked" else ()) == status.blocking


def test_a_fact_without_decision_makes_the_step_wait() -> None:
    """A read fact missing from the decisions: `waiting`, naming the fact."""
    status = step_status(EMAIL, {PAY: record("dec_1", "resolved", "proceed")})
    assert ("waiting", (), (SHIP,)) == (status.status, status.blocking, status.waiting)


def test_blocked_wins_over_waiting_and_lists_every_blocking_id() -> None:
    """A blocking decision makes the step blocked even while another fact has none."""
    step = Step.of("s", [PAY, BAL, SHIP])
    decisions = {
        PAY: record("dec_p", "conflict", "escalate"),
        BAL: record("dec_b", "insufficient", "escalate"),
    }
    status = step_status(step, decisions)
    assert ("blocked", ("dec_p", "dec_b"), (SHIP,)) == (
        status.status,
        status.blocking,
        status.waiting,
    )


def test_a_step_reading_nothing_is_runnable() -> None:
    """No reads, nothing to wait for."""
    assert "runnable" == step_status(Step.of("noop", []), {}).status


def test_a_malformed_decision_raises_naming_the_fact() -> None:
    """A decision record without an action is refused, not guessed."""
    with pytest.raises(PlanError, match=r"inv-1\|payment_status.*action"):
        step_status(REFUND, {PAY: {"decision_id": "dec_1", "outcome": "resolved"}})


def test_the_status_record_lists_the_decision_per_fact() -> None:
    """The record carries, per read fact, the decision seen and whether it permits the step."""
    status = step_status(EMAIL, {PAY: record("dec_1", "conflict", "degrade")}, plan_id="p1")
    expected = {
        "plan_id": "p1",
        "step_id": "email",
        "status": "waiting",
        "irreversible": False,
        "reads": [PAY, SHIP],
        "blocking": [],
        "waiting": [SHIP],
        "facts": [
            {
                "fact": PAY,
                "decision_id": "dec_1",
                "outcome": "conflict",
                "action": "degrade",
                "permits": True,
            },
            {"fact": SHIP, "decision_id": None, "outcome": None, "action": None, "permits": False},
        ],
    }
    assert expected == status.to_record()


def test_repeated_reads_are_read_once() -> None:
    """A step listing a fact twice reads it once."""
    assert (PAY, SHIP) == Step.of("s", [PAY, SHIP, PAY]).reads


# ---------------------------------------------------------------------------- the plan book


def plan(pid: str = "p1") -> Plan:
    """A plan with an irreversible refund, a reversible e-mail and an unrelated step."""
    return Plan(pid, (REFUND, EMAIL, Step.of("ship", [SHIP], irreversible=True)))


def ids(emitted: list[Any]) -> list[tuple[str, str, str]]:
    """(plan, step, status) of emitted statuses."""
    return [(s.plan_id, s.step_id, s.status) for s in emitted]


def test_a_new_plan_emits_only_steps_whose_facts_were_heard() -> None:
    """Nothing is judged on a decision not delivered for this plan."""
    book = PlanBook()
    book, out = on_decision(book, PAY, view("dec_other", "resolved", "proceed"))
    assert [] == out  # nobody reads it: not even kept
    assert {} == book.views
    book, out = on_plan(book, plan())
    assert [] == out
    assert (PAY, SHIP) == book.pending("p1")


def test_decisions_for_a_plan_emit_each_step_once_its_facts_are_heard() -> None:
    """The refund is judged with PAY; the e-mail and ship steps once SHIP is heard too."""
    book, _ = on_plan(PlanBook(), plan())
    book, out = on_decision(book, PAY, view("dec_1", "conflict", "escalate", 1), "p1")
    assert [("p1", "refund", "blocked")] == ids(out)
    assert ("dec_1",) == out[0].blocking
    book, out = on_decision(book, SHIP, None, "p1")
    assert [("p1", "email", "blocked"), ("p1", "ship", "waiting")] == ids(out)


def test_a_cleared_conflict_re_emits_only_the_steps_reading_that_fact() -> None:
    """PAY resolves: refund and e-mail change; the ship step is not emitted again."""
    book, _ = on_plan(PlanBook(), plan())
    book, _ = on_decision(book, PAY, view("dec_1", "conflict", "escalate", 1), "p1")
    book, _ = on_decision(book, SHIP, view("dec_s", "resolved", "proceed", 1), "p1")
    book, out = on_decision(book, PAY, view("dec_2", "resolved", "proceed", 2))
    assert [("p1", "refund", "runnable"), ("p1", "email", "runnable")] == ids(out)


def test_same_status_with_new_blocking_id_is_emitted_other_changes_are_not() -> None:
    """A new conflict id re-emits the blocked refund; a new resolved id re-emits nothing."""
    book, _ = on_plan(PlanBook(), Plan("p1", (REFUND,)))
    book, _ = on_decision(book, PAY, view("dec_1", "conflict", "escalate", 1), "p1")
    book, out = on_decision(book, PAY, view("dec_2", "conflict", "escalate", 2))
    assert [("dec_2",)] == [s.blocking for s in out]
    book, out = on_decision(book, PAY, view("dec_3", "resolved", "proceed", 3))
    assert ["runnable"] == [s.status for s in out]
    book, out = on_decision(book, PAY, view("dec_4", "resolved", "proceed", 4))
    assert [] == out


def test_a_repeated_or_older_decision_changes_nothing() -> None:
    """Redelivery after a restart cannot move a fact back to an older decision."""
    book, _ = on_plan(PlanBook(), Plan("p1", (REFUND,)))
    book, _ = on_decision(book, PAY, view("dec_2", "resolved", "proceed", 20), "p1")
    book, out = on_decision(book, PAY, view("dec_1", "conflict", "escalate", 10))
    assert ([], "dec_2") == (out, book.views[PAY].decision_id if book.views[PAY] else None)
    book, out = on_decision(book, PAY, view("dec_2", "resolved", "proceed", 20), "p1")
    assert [] == out
    book, out = on_decision(book, PAY, None, "p1")
    assert ([], "runnable") == (out, statuses(book, "p1")[0].status)


def test_replacing_a_plan_re_emits_its_steps_and_forgets_unread_facts() -> None:
    """A new version of a plan is emitted afresh; a fact nobody reads any more is dropped."""
    book, _ = on_plan(PlanBook(), plan())
    book, _ = on_decision(book, PAY, view("dec_1", "resolved", "proceed", 1), "p1")
    book, _ = on_decision(book, SHIP, view("dec_s", "resolved", "proceed", 1), "p1")
    book, out = on_plan(book, Plan("p1", (REFUND,)))
    assert [("p1", "refund", "runnable")] == ids(out)
    assert ({PAY}, ()) == (set(book.views), book.pending("p1"))
    book, out = on_remove(book, "p1")
    assert ([], {}, {}, {}) == (out, book.views, book.readers, book.emitted)


def test_a_decision_delivered_for_one_plan_updates_other_judged_plans() -> None:
    """Two plans read PAY: a newer decision re-evaluates both; an unheard plan waits."""
    book, _ = on_plan(PlanBook(), Plan("a", (REFUND,)))
    book, _ = on_plan(book, Plan("b", (REFUND,)))
    book, _ = on_decision(book, PAY, view("dec_1", "resolved", "proceed", 1), "a")
    book, _ = on_decision(book, PAY, view("dec_1", "resolved", "proceed", 1), "b")
    book, _ = on_plan(book, Plan("c", (REFUND,)))
    book, out = on_decision(book, PAY, view("dec_2", "conflict", "escalate", 2), "a")
    assert [("a", "refund", "blocked"), ("b", "refund", "blocked")] == ids(out)


# ---------------------------------------------------------------------------- fact side


def test_fact_side_answers_a_registration_and_passes_newer_decisions_on() -> None:
    """An added plan gets the current decision; later ones reach every reader, older do not."""
    state, notices = on_interest(None, PAY, "add", "p2", view("dec_1", "resolved", "proceed", 1))
    assert [("p2", "dec_1")] == [
        (n.plan_id, n.decision and n.decision.decision_id) for n in notices
    ]
    assert state is not None
    state, _ = on_interest(state, PAY, "add", "p1")
    state, notices = on_fact_decision(state, PAY, view("dec_0", "conflict", "escalate", 0))
    assert [] == notices
    state, notices = on_fact_decision(state, PAY, view("dec_2", "conflict", "escalate", 2))
    assert ["p1", "p2"] == [n.plan_id for n in notices]
    state, _ = on_interest(state, PAY, "drop", "p1")
    state, _ = on_interest(state, PAY, "drop", "p2")
    assert state is None


def test_fact_interest_round_trips() -> None:
    """The stored fact-side state reads back equal."""
    state = FactInterest(view("dec_1", "resolved", "proceed", 5), {"b", "a"})
    assert state == FactInterest.from_obj(state.to_obj())
    assert ["a", "b"] == state.to_obj()["plans"]


# ---------------------------------------------------------------------------- properties

FACTS = [f"inv-{i}|{f}" for i in range(3) for f in ("payment_status", "balance")]
OUTCOME_ACTIONS = [
    ("resolved", "proceed"),
    ("resolved", "escalate"),
    ("resolved", "degrade"),
    ("conflict", "escalate"),
    ("conflict", "degrade"),
    ("insufficient", "degrade"),
    ("rejected", "escalate"),
]
views_st = st.builds(
    lambda n, oa: view(f"dec_{n}", oa[0], oa[1], n),
    st.integers(0, 50),
    st.sampled_from(OUTCOME_ACTIONS),
)
steps_st = st.builds(
    Step.of,
    st.sampled_from(["a", "b", "c", "d"]),
    st.lists(st.sampled_from(FACTS), max_size=4),
    st.booleans(),
)


@PROPERTY
@given(
    step=steps_st,
    decisions=st.dictionaries(st.sampled_from(FACTS), views_st),
    others=st.dictionaries(st.sampled_from(FACTS), views_st),
)
def test_a_step_status_depends_only_on_the_facts_it_reads(
    step: Step, decisions: dict[str, DecisionView], others: dict[str, DecisionView]
) -> None:
    """Changing or removing decisions of facts the step does not read changes nothing."""
    only_read = {k: v for k, v in decisions.items() if k in step.reads}
    noise = {k: v for k, v in others.items() if k not in step.reads}
    assert evaluate("p", step, only_read) == evaluate("p", step, decisions)
    assert evaluate("p", step, only_read) == evaluate("p", step, {**noise, **only_read})
    records = {k: v.to_obj() | {"decided_at": None} for k, v in only_read.items()}
    as_records = step_status(step, records, "p")
    assert evaluate("p", step, only_read).signature == as_records.signature


plans_st = st.builds(
    lambda pid, steps: Plan(pid, tuple({s.step_id: s for s in steps}.values())),
    st.sampled_from(["p1", "p2", "p3"]),
    st.lists(steps_st, min_size=1, max_size=4),
)
ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("plan"), plans_st),
        st.tuples(st.just("remove"), st.sampled_from(["p1", "p2", "p3"])),
        st.tuples(
            st.just("decision"),
            st.tuples(
                st.sampled_from(FACTS),
                st.one_of(st.none(), views_st),
                st.sampled_from([None, "p1", "p2", "p3"]),
            ),
        ),
    ),
    max_size=30,
)


@PROPERTY
@given(ops=ops_st)
def test_the_book_emits_exactly_the_changes_of_the_steps_reading_the_fact(ops: list[Any]) -> None:
    """After every operation the last emitted status of each judged step is its true status.

    And a decision only ever emits steps that read its fact.
    """
    book = PlanBook()
    last: dict[tuple[str, str], Any] = {}
    for kind, arg in ops:
        if kind == "plan":
            book, out = on_plan(book, arg)
            last = {k: v for k, v in last.items() if k[0] != arg.plan_id}
        elif kind == "remove":
            book, out = on_remove(book, arg)
            last = {k: v for k, v in last.items() if k[0] != arg}
        else:
            fact, decision, for_plan = arg
            book, out = on_decision(book, fact, decision, for_plan)
            assert all(fact in s.reads for s in out)
        for status in out:
            last[(status.plan_id, status.step_id)] = status.signature
        for pid in book.plans:
            for status in statuses(book, pid):
                assert status.signature == last.get((pid, status.step_id)), (pid, status)
