"""The fact side of plan blocking: per fact, the plans reading it and its last decision.

Decisions are keyed by fact and plans by plan id, so the join runs in two places. On the
fact's home partition (this module) a small state per fact that some plan reads holds
the ids of those plans and the last decision passed on; every newer decision is sent as
a notice to each of them, and a plan that registers gets the current decision (or "none
yet") at once. On the plan's home partition `claimwatch.core.plans.PlanBook` turns the
notices into step statuses. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from claimwatch.core.plain import Plain, fields_of
from claimwatch.core.plans import MAX_FACT_CHARS, DecisionView

InterestOp = Literal["add", "drop"]

#: Plans that may read one fact: its state (their ids, at most 128 characters each) stays
#: far below the producer's 1 MB limit, and one decision costs at most this many notices.
#: A plan asking past it is refused (`Notice.refused`), and answered `rejected`.
MAX_PLANS_PER_FACT = 1000


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
    #: why the plan may not read the fact (None: it may); the plan is then rejected
    refused: str | None = None

    def to_obj(self) -> dict[str, Any]:
        """The `plans.updates` record (`refused` only when set)."""
        obj = fields_of(self)
        if self.refused is None:
            del obj["refused"]
        return obj


#: Longest plan id (as the plan schema allows), decision id, outcome or action, and reason.
MAX_ID_CHARS = 128
MAX_WORD_CHARS = 32
MAX_REASON_CHARS = 512


class InternalRecordError(ValueError):
    """A record of `plans.interest` or `plans.updates` that does not validate.

    Anyone who can write those topics can send one, so they are checked as public ones.
    """


def _text(obj: Mapping[str, Any], name: str, most: int, *, empty: bool = False) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or (not value and not empty):
        raise InternalRecordError(f"`{name}` must be a non-empty string")
    if len(value) > most:
        raise InternalRecordError(f"`{name}` has {len(value)} characters, over {most}")
    return value


def _fact(obj: Mapping[str, Any]) -> str:
    fact = _text(obj, "fact", MAX_FACT_CHARS)
    subject, bar, field_name = fact.rpartition("|")
    if not bar or not subject or not field_name:
        raise InternalRecordError("`fact` is not `subject|field`")
    return fact


def _view(obj: Any) -> DecisionView | None:
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise InternalRecordError("`decision` must be an object or null")
    decided = obj.get("decided_us")
    if decided is not None and (type(decided) is not int or not 0 <= decided < 2**63):
        raise InternalRecordError("`decision.decided_us` must be a whole number or null")
    return DecisionView(
        _text(obj, "decision_id", MAX_ID_CHARS),
        _text(obj, "outcome", MAX_WORD_CHARS),
        _text(obj, "action", MAX_WORD_CHARS),
        decided,
    )


def notice_of(obj: Any) -> Notice:
    """A `plans.updates` record, validated; InternalRecordError says why it is not one."""
    if not isinstance(obj, dict):
        raise InternalRecordError("not a JSON object")
    refused = obj.get("refused")
    if refused is not None:
        refused = _text(obj, "refused", MAX_REASON_CHARS)
    return Notice(
        _text(obj, "plan_id", MAX_ID_CHARS), _fact(obj), _view(obj.get("decision")), refused
    )


def interest_of(obj: Any) -> tuple[InterestOp, str, str]:
    """A `plans.interest` record (op, plan id, fact), validated (InternalRecordError)."""
    if not isinstance(obj, dict):
        raise InternalRecordError("not a JSON object")
    op = obj.get("op")
    if op not in ("add", "drop"):
        raise InternalRecordError("`op` must be add or drop")
    return ("add" if op == "add" else "drop"), _text(obj, "plan_id", MAX_ID_CHARS), _fact(obj)


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
    if plan_id not in state.plans and len(state.plans) >= MAX_PLANS_PER_FACT:
        reason = (
            f"plan_limit: {len(state.plans)} plans read this fact, at most {MAX_PLANS_PER_FACT}"
        )
        return state, [Notice(plan_id, fact, None, reason)]
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
