"""Plan blocking: which plan steps may run, given the decisions of the facts they read.

A step declares the facts it reads (`subject|field`) and whether it is irreversible. Its
status is a function of the decisions of those facts only:

- `blocked` when a fact it reads has a decision that does not permit the step; the
  record lists those decisions' ids (`blocking`). An irreversible step is permitted only
  by action `proceed` — outcome `resolved` with a winner stronger than a mere assertion
  (docs/concepts.md#decide) —
  so `conflict`, `insufficient`, `rejected` and a resolution won by a user's
  word all block it. A reversible step is also permitted by action `degrade` (the policy
  marks the field not consequential, so a constrained answer is acceptable); `escalate`
  (a consequential field in conflict, insufficient or rejected, or an asserted
  resolution of it) blocks every step.
- `waiting` when nothing blocks but a fact it reads has no decision yet (`waiting` lists
  those facts).
- `runnable` otherwise (a step that reads nothing is runnable).

`step_status` answers this in-process from decision records (as `GET /facts/...` or the
`decisions` topic give them). `PlanBook` with `on_plan` / `on_decision` / `on_remove` is
the state machine of the stream processor: it keeps the plans, which plans read each
fact, the last decision heard per fact, and the last status emitted per step; a decision
re-evaluates only the steps that read its fact and emits only the steps whose status or
blocking ids changed. Pure: no I/O, no clock, deterministic output order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from claimwatch.core.plain import Plain
from claimwatch.core.timeutil import TimestampError, parse_rfc3339

StepState = Literal["runnable", "blocked", "waiting", "rejected"]
#: Bounds of one plan beyond the schema's (steps, reads per step): what it stores and the
#: work one of its decisions costs stay bounded. A plan past them is answered `rejected`.
MAX_PLAN_FACTS = 512
MAX_PLAN_READS = 2048
MAX_FACT_CHARS = 512
#: Actions that let a step run: an irreversible one only on `proceed`.
IRREVERSIBLE_OK = frozenset({"proceed"})
REVERSIBLE_OK = frozenset({"proceed", "degrade"})


class PlanError(ValueError):
    """A plan, step or decision that cannot be used; the message names what and why."""


@dataclass(frozen=True, slots=True)
class Step(Plain):
    """One plan step: its id, the fact keys it reads (no repeats, in order) and reversibility."""

    step_id: str
    reads: tuple[str, ...] = ()
    irreversible: bool = True

    @classmethod
    def of(cls, step_id: str, reads: Iterable[str], irreversible: bool = True) -> Step:
        """A step with repeated reads dropped (first occurrence kept)."""
        return cls(step_id, tuple(dict.fromkeys(reads)), irreversible)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Step:
        """The step back from `to_obj` output (or a plan's step as published)."""
        reads = obj.get("reads", ())
        return cls.of(str(obj["step_id"]), reads, bool(obj.get("irreversible", True)))


@dataclass(frozen=True, slots=True)
class Plan(Plain):
    """A plan: its id and its steps, in order."""

    plan_id: str
    steps: tuple[Step, ...]

    def facts(self) -> tuple[str, ...]:
        """Every fact key some step reads, sorted."""
        return tuple(sorted({key for step in self.steps for key in step.reads}))

    def bound_problem(self) -> str | None:
        """Why the plan is past the bounds of one plan (None when it is within them)."""
        reads = sum(len(step.reads) for step in self.steps)
        if reads > MAX_PLAN_READS:
            return f"plan_too_large: its steps read {reads} fact keys, over {MAX_PLAN_READS}"
        facts = len({key for step in self.steps for key in step.reads})
        if facts > MAX_PLAN_FACTS:
            return f"plan_too_large: it reads {facts} distinct facts, over {MAX_PLAN_FACTS}"
        longest = max((len(k) for s in self.steps for k in s.reads), default=0)
        if longest > MAX_FACT_CHARS:
            return f"plan_too_large: a fact key has {longest} characters, over {MAX_FACT_CHARS}"
        return None

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Plan:
        """The plan back from `to_obj` output (or a validated plan record)."""
        return cls(str(obj["plan_id"]), tuple(Step.from_obj(s) for s in obj["steps"]))


@dataclass(frozen=True, slots=True)
class DecisionView(Plain):
    """What a step status needs of a decision: its id, outcome, action and time."""

    decision_id: str
    outcome: str
    action: str
    decided_us: int | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DecisionView:
        """The view of a decision record; PlanError when its id, outcome or action is missing."""
        values = [record.get(k) for k in ("decision_id", "outcome", "action")]
        for name, value in zip(("decision_id", "outcome", "action"), values, strict=True):
            if not isinstance(value, str) or not value:
                raise PlanError(f"decision record without a string `{name}`")
        decided = record.get("decided_at")
        try:
            decided_us = parse_rfc3339(decided) if decided is not None else None
        except TimestampError as exc:
            raise PlanError(f"decision record with a bad `decided_at`: {exc}") from None
        return cls(str(values[0]), str(values[1]), str(values[2]), decided_us)

    def newer_than(self, other: DecisionView | None) -> bool:
        """True when this view replaces `other`: another id, not decided before it."""
        if other is None:
            return True
        if self.decision_id == other.decision_id:
            return False
        if self.decided_us is not None and other.decided_us is not None:
            return self.decided_us >= other.decided_us
        return True


def permits(view: DecisionView, irreversible: bool) -> bool:
    """Whether a decision lets a step run (see the module docstring)."""
    if irreversible:
        return view.outcome == "resolved" and view.action in IRREVERSIBLE_OK
    return view.action in REVERSIBLE_OK


@dataclass(frozen=True, slots=True)
class StepStatus:
    """The status of one step, and the decision seen for each fact it reads (None: none yet)."""

    plan_id: str
    step_id: str
    status: StepState
    irreversible: bool
    reads: tuple[str, ...]
    blocking: tuple[str, ...]
    waiting: tuple[str, ...]
    facts: tuple[tuple[str, DecisionView | None], ...]
    #: why the step is `rejected` (its plan was refused); None for the other statuses
    reason: str | None = None

    @property
    def signature(self) -> tuple[str, tuple[str, ...]]:
        """What a re-emission is judged on: the status and the blocking decision ids."""
        return (self.status, self.blocking)

    def to_record(self) -> dict[str, Any]:
        """The `plans.steps` record (streams/claimwatch/models/plan.py StepStatusRecord)."""
        extra = {"reason": self.reason} if self.reason is not None else {}
        return {
            "plan_id": self.plan_id,
            "step_id": self.step_id,
            "status": self.status,
            "irreversible": self.irreversible,
            "reads": list(self.reads),
            "blocking": list(self.blocking),
            "waiting": list(self.waiting),
            "facts": [
                {
                    "fact": key,
                    "decision_id": view.decision_id if view else None,
                    "outcome": view.outcome if view else None,
                    "action": view.action if view else None,
                    "permits": bool(view and permits(view, self.irreversible)),
                }
                for key, view in self.facts
            ],
        } | extra


def evaluate(plan_id: str, step: Step, views: Mapping[str, DecisionView | None]) -> StepStatus:
    """The status of `step` from the views of the facts it reads (missing or None: no decision)."""
    seen = tuple((key, views.get(key)) for key in step.reads)
    blocking = tuple(
        v.decision_id for _, v in seen if v is not None and not permits(v, step.irreversible)
    )
    waiting = tuple(key for key, v in seen if v is None)
    status: StepState = "blocked" if blocking else "waiting" if waiting else "runnable"
    return StepStatus(
        plan_id, step.step_id, status, step.irreversible, step.reads, blocking, waiting, seen
    )


def rejected(plan: Plan, reason: str) -> list[StepStatus]:
    """Every step of a refused plan, `rejected` with `reason` (a rejected step never runs)."""
    return [
        StepStatus(plan.plan_id, s.step_id, "rejected", s.irreversible, s.reads, (), (), (), reason)
        for s in plan.steps
    ]


def step_status(
    step: Step, decisions: Mapping[str, Mapping[str, Any]], plan_id: str = ""
) -> StepStatus:
    """In-process helper: a step's status from decision records by fact key.

    `decisions` maps `subject|field` to the fact's current decision record; a fact missing
    from it has no decision yet. Only the facts the step reads are looked at. A record
    without a usable id, outcome or action raises PlanError naming the fact.
    """
    views: dict[str, DecisionView | None] = {}
    for key in step.reads:
        record = decisions.get(key)
        if record is None:
            continue
        try:
            views[key] = DecisionView.from_record(record)
        except PlanError as exc:
            raise PlanError(f"decision for {key}: {exc}") from None
    return evaluate(plan_id, step, views)


@dataclass(slots=True)
class PlanBook:
    """The processor's state: plans, readers per fact, decisions heard, last emitted statuses.

    `heard[plan_id]` is the set of the plan's facts whose current decision (or its absence)
    was delivered for that plan; steps are emitted only once every fact they read was heard,
    so a new plan is never judged on a decision held for another plan that may be out of
    date. `views[fact]` is the last decision heard for the fact (None: it has none yet).
    Mutated in place by the step functions, which also return it.
    """

    plans: dict[str, Plan] = field(default_factory=dict)
    readers: dict[str, set[str]] = field(default_factory=dict)
    views: dict[str, DecisionView | None] = field(default_factory=dict)
    heard: dict[str, set[str]] = field(default_factory=dict)
    emitted: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    def pending(self, plan_id: str) -> tuple[str, ...]:
        """The plan's facts not heard yet for it, sorted."""
        plan = self.plans.get(plan_id)
        if plan is None:
            return ()
        heard = self.heard.get(plan_id, set())
        return tuple(f for f in plan.facts() if f not in heard)

    def reading(self, fact: str) -> tuple[str, ...]:
        """The ids of the plans that read `fact`, sorted."""
        return tuple(sorted(self.readers.get(fact, ())))


def _emit(book: PlanBook, plan_id: str, steps: Iterable[Step], force: bool) -> list[StepStatus]:
    """Evaluate steps whose facts were all heard; keep and return the changed (or all: force)."""
    out: list[StepStatus] = []
    heard = book.heard.get(plan_id, set())
    for step in steps:
        if not all(key in heard for key in step.reads):
            continue
        status = evaluate(plan_id, step, book.views)
        ref = (plan_id, step.step_id)
        if force or book.emitted.get(ref) != status.signature:
            book.emitted[ref] = status.signature
            out.append(status)
    return out


def _unlink(book: PlanBook, plan_id: str, keep: set[str]) -> None:
    """Remove a plan from the readers of its facts not in `keep`; forget unread views."""
    plan = book.plans.get(plan_id)
    if plan is None:
        return
    for fact in plan.facts():
        if fact in keep:
            continue
        readers = book.readers.get(fact)
        if readers is not None:
            readers.discard(plan_id)
            if not readers:
                del book.readers[fact]
                book.views.pop(fact, None)
        book.heard.get(plan_id, set()).discard(fact)


def on_plan(book: PlanBook, plan: Plan) -> tuple[PlanBook, list[StepStatus]]:
    """Add or replace a plan; emit the status of every step whose facts were all heard.

    Facts the plan read before stay heard (they were kept current); new facts wait for
    `on_decision` with this plan's id (the caller asks for them: `book.pending(plan_id)`);
    a step reading one of them is emitted once all its facts were heard.
    """
    pid = plan.plan_id
    facts = set(plan.facts())
    _unlink(book, pid, facts)
    old = book.plans.get(pid)
    for step in old.steps if old is not None else ():
        # every step of the new version is emitted afresh once it can be judged
        book.emitted.pop((pid, step.step_id), None)
    book.plans[pid] = plan
    book.heard.setdefault(pid, set())
    for fact in facts:
        book.readers.setdefault(fact, set()).add(pid)
    return book, _emit(book, pid, plan.steps, force=True)


def on_remove(book: PlanBook, plan_id: str) -> tuple[PlanBook, list[StepStatus]]:
    """Forget a plan (nothing is emitted)."""
    plan = book.plans.get(plan_id)
    if plan is not None:
        _unlink(book, plan_id, set())
        for step in plan.steps:
            book.emitted.pop((plan_id, step.step_id), None)
        del book.plans[plan_id]
        book.heard.pop(plan_id, None)
    return book, []


def on_decision(
    book: PlanBook, fact: str, decision: DecisionView | None, for_plan: str | None = None
) -> tuple[PlanBook, list[StepStatus]]:
    """A fact's current decision (None: it has none) arrives; re-evaluate its readers only.

    `for_plan` names the plan it was delivered for (that plan has now heard the fact);
    None means it is current for every plan reading the fact. A decision older than the
    one held, or the same one again, changes no view. Emitted: the steps reading `fact`
    whose status or blocking ids changed, or that can be judged for the first time; in
    order of plan id, then step order.
    """
    readers = book.reading(fact)
    if not readers:
        return book, []
    held = book.views.get(fact)
    if decision is not None and decision.newer_than(held):
        book.views[fact] = decision
    elif fact not in book.views:
        book.views[fact] = None
    for pid in readers if for_plan is None else (p for p in readers if p == for_plan):
        book.heard.setdefault(pid, set()).add(fact)
    out: list[StepStatus] = []
    for pid in readers:
        steps = [s for s in book.plans[pid].steps if fact in s.reads]
        out.extend(_emit(book, pid, steps, force=False))
    return book, out


def statuses(book: PlanBook, plan_id: str) -> list[StepStatus]:
    """The current status of every judged step of a plan (no state change)."""
    plan = book.plans.get(plan_id)
    if plan is None:
        return []
    heard = book.heard.get(plan_id, set())
    return [
        evaluate(plan_id, s, book.views) for s in plan.steps if all(k in heard for k in s.reads)
    ]
