"""The fact side of plan blocking: per fact, the plans reading it and its last decision.

Decisions are keyed by fact and plans by plan id, so the join runs in two places. On the
fact's home partition (this module) a small state per fact that some plan reads holds
the ids of those plans and the last decision passed on; every newer decision is sent as
a notice to each of them, and a plan that registers gets the current decision (or "none
yet") at once. On the plan's home partition `streams.core.plans.PlanBook` turns the
notices into step statuses. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from streams.core.plain import Plain, fields_of
from streams.core.plans import DecisionView

InterestOp = Literal["add", "drop"]


@dataclass(slots=True)
class FactInterest(Plain):
    """One fact that plans read: their ids and the last decision sent to them (None: none)."""

    view: DecisionView | None = None
    plans: set[str] = field(default_factory=set)

    def to_obj(self) -> dict[str, Any]:
        """A JSON-able copy (plan ids sorted)."""
        return fields_of(self, plans=sorted(self.plans))


@dataclass(frozen=True, slots=True)
class Notice(Plain):
    """The current decision of a fact (None: it has none yet), for one plan reading it.

    `to_obj` gives the record of the internal `plans.updates` topic.
    """

    plan_id: str
    fact: str
    decision: DecisionView | None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Notice:
        """The notice back from `to_obj` output; KeyError/TypeError/ValueError when malformed."""
        plan_id, fact, decision = obj["plan_id"], obj["fact"], obj["decision"]
        if not isinstance(plan_id, str) or not isinstance(fact, str):
            raise TypeError("`plan_id` and `fact` must be strings")
        return cls(plan_id, fact, DecisionView.from_obj(decision) if decision else None)


def on_interest(
    state: FactInterest | None,
    fact: str,
    op: InterestOp,
    plan_id: str,
    current: DecisionView | None = None,
) -> tuple[FactInterest | None, list[Notice]]:
    """A plan starts (`add`) or stops (`drop`) reading `fact`.

    `current` is the fact's latest decision known elsewhere on this partition (the
    resolutions table), used when it is newer than the one held. An `add` is answered
    with a notice even when the plan was registered already (a repeated request is how a
    plan asks again). The state is None once no plan reads the fact.
    """
    if op == "drop":
        if state is None:
            return None, []
        state.plans.discard(plan_id)
        return (state if state.plans else None), []
    state = state if state is not None else FactInterest()
    if current is not None and current.newer_than(state.view):
        state.view = current
    state.plans.add(plan_id)
    return state, [Notice(plan_id, fact, state.view)]


def on_fact_decision(
    state: FactInterest | None, fact: str, view: DecisionView
) -> tuple[FactInterest | None, list[Notice]]:
    """A decision of `fact` arrives: when newer than the one held, notify every reading plan."""
    if state is None or not view.newer_than(state.view):
        return state, []
    state.view = view
    return state, [Notice(pid, fact, view) for pid in sorted(state.plans)]
