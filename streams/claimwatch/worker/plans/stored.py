"""A plan's stored record (plan side): what is kept of it, and putting it back into a book."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from claimwatch.core.plans import DecisionView, Plan, PlanBook

#: Table key prefix of a stored plan (plan side).
PLAN_PREFIX: Final = b"p/"
#: Largest stored plan record (plan, decisions heard, statuses emitted): below the
#: producer's 1 MB request limit with room to spare. The plan bounds keep a plan well
#: below it (`Plan.bound_problem`); a plan whose record would still exceed it is rejected.
MAX_STORED_PLAN_BYTES: Final = 900_000


def stored_record(partition: int, book: PlanBook, plan: Plan) -> dict[str, Any]:
    """The record kept of a plan: the plan, the decisions it heard, the statuses emitted."""
    pid = plan.plan_id
    heard = sorted(book.heard.get(pid, set()))
    return {
        "partition": partition,
        "plan": plan.to_obj(),
        "heard": {f: _obj(book.views.get(f)) for f in heard},
        "emitted": {
            s.step_id: [sig[0], list(sig[1])]
            for s in plan.steps
            if (sig := book.emitted.get((pid, s.step_id))) is not None
        },
    }


def _obj(view: DecisionView | None) -> dict[str, Any] | None:
    """A view as JSON (None stays None)."""
    return view.to_obj() if view is not None else None


def restore(book: PlanBook, stored: Mapping[str, Any]) -> None:
    """Put one stored plan record back into a book."""
    plan = Plan.from_obj(stored["plan"])
    pid = plan.plan_id
    book.plans[pid] = plan
    for fact in plan.facts():
        book.readers.setdefault(fact, set()).add(pid)
    heard: dict[str, Any] = stored.get("heard", {})
    book.heard[pid] = set(heard)
    for fact, obj in heard.items():
        view = DecisionView.from_obj(obj) if obj else None
        if view is not None and view.newer_than(book.views.get(fact)):
            book.views[fact] = view
        elif fact not in book.views:
            book.views[fact] = None
    for step_id, (status, blocking) in stored.get("emitted", {}).items():
        book.emitted[(pid, step_id)] = (status, tuple(blocking))
