"""The edge of plan blocking: Kafka records in, pure plan/fact steps, records out (no Faust).

Why two stages. Plans are keyed by plan id and decisions by fact key, and a step may read
facts that live on several partitions (so on several workers). A processor keyed by plan
cannot read the decisions it needs, and one keyed by fact cannot see a whole step. So:

1. Plan side (home partition of the plan id; topics `plans` and `plans.updates`): a plan
   is validated (malformed -> dead-letter topic), stored, and each fact it reads is asked
   for on the internal topic `plans.interest`, keyed by fact key (so co-partitioned with
   `claims`, `decisions` and `resolutions`).
2. Fact side (home partition of the fact; topic `plans.interest`, and each decision the
   claims agent makes there, handed over in process: `on_decided`): per
   fact that some plan reads, the reading plan ids and the last decision passed on. A
   registration is answered at once with the fact's current decision from the
   `resolutions` table of the same partition (or "none yet"); every newer decision is
   passed to each reading plan. The answers go to `plans.updates`, keyed
   by plan id, back to the plan side.
3. The plan side's `PlanBook` re-evaluates only the steps reading that fact and writes the
   changed statuses to `plans.steps`, keyed by plan id.

Both stages keep their state in changelog-backed tables and read only records of their own
partition, so the join is correct with any number of workers: Faust assigns partition p of
every topic with the worker's partition count to one worker. Decisions carry their
`decided_at`, so a decision re-read after a restart never replaces a newer one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from schemas.plan import PlanRecord
from streams.core.plan_facts import (
    FactInterest,
    Notice,
    interest_of,
    notice_of,
    on_fact_decision,
    on_interest,
)
from streams.core.plans import (
    DecisionView,
    Plan,
    PlanBook,
    PlanError,
    Step,
    StepStatus,
    on_decision,
    on_plan,
    on_remove,
    rejected,
)
from streams.wire.codec import decode_model, dumps, loads
from streams.wire.topics import TopicNames, misplaced, partition_for
from streams.worker.edge import (
    Elsewhere,
    Handled,
    Outgoing,
    PerPartition,
    dead_letter,
    decode_at_home,
)

#: Largest plan message accepted (bytes).
MAX_PLAN_BYTES: Final = 256 * 1024
#: Table key prefix of a stored plan (plan side).
PLAN_PREFIX: Final = b"p/"
#: Largest stored plan record (plan, decisions heard, statuses emitted): below the
#: producer's 1 MB request limit with room to spare. The plan bounds keep a plan well
#: below it (`Plan.bound_problem`); a plan whose record would still exceed it is rejected.
MAX_STORED_PLAN_BYTES: Final = 900_000

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PlansHandled(Handled):
    """What one record led to: records to send, counters, and the step statuses emitted."""

    statuses: list[StepStatus] = field(default_factory=list)
    #: plans or facts whose handling raised and whose state was dropped (see `quarantine`)
    quarantined: int = 0


def decode_plan(raw: bytes) -> Plan:
    """Parse one plan; raise DecodeError with a reason a human can act on."""
    record = decode_model(raw, PlanRecord, "a plan", MAX_PLAN_BYTES)
    steps = tuple(Step.of(s.step_id, s.reads, s.irreversible) for s in record.steps)
    return Plan(record.plan_id, steps)


def _view_of(raw: bytes | None) -> DecisionView | None:
    """The view of a stored decision record (None when absent or unusable)."""
    if raw is None:
        return None
    try:
        return DecisionView.from_record(loads(raw))
    except (PlanError, ValueError):
        return None


@dataclass(eq=False)
class PlansEdge:
    """Both stages over two bytes tables (Faust tables, or dicts in tests).

    `plans_table` (plan side) holds one record per plan under `p/<plan id>`; `facts_table`
    (fact side) one `FactInterest` per fact key; `resolutions` is the worker's table of the
    latest decision per fact (read only).
    """

    names: TopicNames
    partitions: int
    plans_table: MutableMapping[bytes, bytes]
    facts_table: MutableMapping[bytes, bytes]
    resolutions: Mapping[bytes, bytes]
    _books: PerPartition[PlanBook] = field(init=False)
    #: the keys of `facts_table` (facts some plan reads), listed on first use after each
    #: `forget` and kept with every write here: a decision of a fact no plan reads (nearly
    #: every decision) is passed over without a store lookup
    _read: set[bytes] | None = field(init=False, default=None)
    #: stored plans that did not restore since the last record (dropped, counted with it)
    _unrestored: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._books = PerPartition(self._restored_book)

    # ------------------------------------------------------------------ plan side

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop in-memory plan books (on rebalance, after recovery); rebuilt from the table."""
        self._books.forget(partitions)
        self._read = None

    def book(self, partition: int) -> PlanBook:
        """The plan book of a partition, restored from the table on first use."""
        return self._books[partition]

    def _restored_book(self, partition: int) -> PlanBook:
        """The plan book of a partition as its stored plan records hold it."""
        book = PlanBook()
        for key, raw in list(self.plans_table.items()):
            if not key.startswith(PLAN_PREFIX):
                continue
            try:
                stored = loads(raw)
                if stored["partition"] == partition:
                    _restore(book, stored)
            except Exception:
                # one stored plan that does not restore is dropped, never its partition
                log.exception("stored plan %r does not restore; it is dropped", key[:200])
                self.plans_table.pop(key, None)
                on_remove(book, key[len(PLAN_PREFIX) :].decode(errors="replace"))
                self._unrestored += 1
        return book

    def handle_plan_side(
        self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> PlansHandled:
        """Process one record of `plans` or `plans.updates`."""
        out = PlansHandled()
        if topic == self.names.plans_updates:
            self._on_notice(partition, offset, key, value or b"", out)
        elif not value:
            self._on_delete(partition, offset, key, out)
        else:
            self._on_plan(partition, offset, key, value, out)
        out.quarantined += self._unrestored
        self._unrestored = 0
        return out

    def _on_plan(
        self, partition: int, offset: int, key: bytes | None, value: bytes, out: PlansHandled
    ) -> None:
        """A plan: validate, re-route to its home, store, ask for its facts, emit statuses."""
        origin = (self.names.plans, partition, offset)
        plan = decode_at_home(
            self.names, origin, key, value, decode_plan, _plan_key, self.partitions, "plan_"
        )
        if isinstance(plan, Elsewhere):
            out.elsewhere(plan)
            return
        problem = plan.bound_problem()
        if problem is not None:
            self._reject(partition, plan, problem, out)
            return
        try:
            self._take_plan(partition, plan, out)
        except Exception as exc:
            self._quarantine(partition, plan.plan_id, exc, out, plan)

    def _take_plan(self, partition: int, plan: Plan, out: PlansHandled) -> None:
        """Store a plan within its bounds, ask for its facts, emit the statuses it can."""
        book = self.book(partition)
        old = book.plans.get(plan.plan_id)
        book, statuses = on_plan(book, plan)
        out.events.append("plan")
        dropped = set(old.facts() if old is not None else ()) - set(plan.facts())
        for fact in sorted(dropped):
            out.sends.append(self._interest("drop", plan.plan_id, fact))
        # facts not heard yet are asked for (again: a re-published plan asks anew)
        for fact in book.pending(plan.plan_id):
            out.sends.append(self._interest("add", plan.plan_id, fact))
        self._save(partition, book, [plan.plan_id], out)
        self._statuses(partition, statuses, out)

    def _reject(
        self, partition: int, plan: Plan, reason: str, out: PlansHandled, quiet: bool = False
    ) -> None:
        """Refuse a plan: every step `rejected` with `reason`; its state and interests dropped.

        The plan's earlier version (if one is stored) is forgotten too: the sender's latest
        word on the plan is what was refused.
        """
        book = self.book(partition)
        held = book.plans.get(plan.plan_id)
        facts = set(plan.facts()) | set(held.facts() if held is not None else ())
        if held is not None:
            on_remove(book, plan.plan_id)
        self.plans_table.pop(PLAN_PREFIX + plan.plan_id.encode(), None)
        for fact in sorted(facts):
            out.sends.append(self._interest("drop", plan.plan_id, fact))
        out.events.append("plan_rejected")
        self._statuses(partition, rejected(plan, reason), out)

    def _quarantine(
        self,
        partition: int,
        plan_id: str,
        exc: Exception,
        out: PlansHandled,
        plan: Plan | None = None,
    ) -> None:
        """A plan whose handling raised: rejected with `internal_error`, the rest goes on.

        Logged once with its traceback, counted (`claimwatch_quarantined_total`); the
        partition's book is rebuilt from the table, so nothing half changed stays.
        """
        log.error("plan %r raised; it is rejected and its state dropped", plan_id, exc_info=exc)
        out.quarantined += 1
        reason = f"internal_error: {type(exc).__name__}: {exc}"[:2000]
        self._books.forget({partition})
        try:
            known = plan if plan is not None else self.book(partition).plans.get(plan_id)
        except Exception:  # the partition's stored plans do not restore: drop this one
            self.plans_table.pop(PLAN_PREFIX + plan_id.encode(), None)
            self._books.forget({partition})
            known = plan
        if known is None:
            self.plans_table.pop(PLAN_PREFIX + plan_id.encode(), None)
            return
        try:
            self._reject(partition, known, reason, out)
        except Exception:
            log.exception("rejecting plan %r failed; its stored record is dropped", plan_id)
            self.plans_table.pop(PLAN_PREFIX + plan_id.encode(), None)
            self._books.forget({partition})

    def _on_delete(self, partition: int, offset: int, key: bytes | None, out: PlansHandled) -> None:
        """An empty value: forget the plan and stop reading its facts."""
        if not key:
            origin = (self.names.plans, partition, offset)
            reason = "not a plan: an empty value deletes a plan and needs its id as key"
            out.events.append("plan_dead_letter")
            out.sends.append(dead_letter(self.names, origin, key, b"", reason))
            return
        home = partition_for(key, self.partitions)
        if partition != home:
            out.events.append("plan_rerouted")
            out.sends.append(Outgoing(self.names.plans, key, b"", home))
            return
        book = self.book(partition)
        plan_id = key.decode(errors="replace")
        plan = book.plans.get(plan_id)
        if plan is None:
            return
        for fact in plan.facts():
            out.sends.append(self._interest("drop", plan_id, fact))
        on_remove(book, plan_id)
        out.events.append("plan_removed")
        self.plans_table.pop(PLAN_PREFIX + key, None)

    def _on_notice(
        self, partition: int, offset: int, key: bytes | None, value: bytes, out: PlansHandled
    ) -> None:
        """A fact's decision for one plan: re-evaluate the steps reading the fact."""
        try:
            notice = notice_of(loads(value))
        except ValueError as exc:
            origin = (self.names.plans_updates, partition, offset)
            out.events.append("plan_dead_letter")
            reason = f"not a plan update: {type(exc).__name__}: {exc}"
            out.sends.append(dead_letter(self.names, origin, key, value, reason))
            return
        try:
            self._take_notice(partition, notice, out)
        except Exception as exc:
            self._quarantine(partition, notice.plan_id, exc, out)

    def _take_notice(self, partition: int, notice: Notice, out: PlansHandled) -> None:
        book = self.book(partition)
        if notice.refused is not None:
            plan = book.plans.get(notice.plan_id)
            if plan is not None:
                self._reject(partition, plan, notice.refused, out)
            return
        held = book.views.get(notice.fact)
        was_heard = notice.fact in book.heard.get(notice.plan_id, set())
        book, statuses = on_decision(book, notice.fact, notice.decision, notice.plan_id)
        out.events.append("plan_update")
        touched: list[str] = []
        if book.views.get(notice.fact) != held:
            touched = list(book.reading(notice.fact))
        elif not was_heard and notice.fact in book.heard.get(notice.plan_id, set()):
            touched = [notice.plan_id]
        self._save(partition, book, touched, out)
        self._statuses(partition, statuses, out)

    def _statuses(self, partition: int, statuses: list[StepStatus], out: PlansHandled) -> None:
        """Step statuses to `plans.steps`, on the plan's partition."""
        for status in statuses:
            out.statuses.append(status)
            out.events.append("plan_step_status")
            body = dumps(status.to_record())
            out.sends.append(
                Outgoing(self.names.plans_steps, status.plan_id.encode(), body, partition)
            )

    def _interest(self, op: str, plan_id: str, fact: str) -> Outgoing:
        """A request to start or stop reading a fact, to the fact's home partition."""
        key = fact.encode()
        body = dumps({"op": op, "plan_id": plan_id, "fact": fact})
        return Outgoing(self.names.plans_interest, key, body, partition_for(key, self.partitions))

    def _save(self, partition: int, book: PlanBook, plan_ids: list[str], out: PlansHandled) -> None:
        """Write the given plans' records (so to the changelog); reject one past the bound."""
        for pid in sorted(set(plan_ids)):
            plan = book.plans.get(pid)
            if plan is None:
                continue
            heard = sorted(book.heard.get(pid, set()))
            record = {
                "partition": partition,
                "plan": plan.to_obj(),
                "heard": {f: _obj(book.views.get(f)) for f in heard},
                "emitted": {
                    s.step_id: [sig[0], list(sig[1])]
                    for s in plan.steps
                    if (sig := book.emitted.get((pid, s.step_id))) is not None
                },
            }
            body = dumps(record)
            if len(body) > MAX_STORED_PLAN_BYTES:
                reason = (
                    f"plan_too_large: its stored record would have {len(body)} bytes, "
                    f"over {MAX_STORED_PLAN_BYTES}"
                )
                self._reject(partition, plan, reason, out)
                continue
            self.plans_table[PLAN_PREFIX + pid.encode()] = body

    # ------------------------------------------------------------------ fact side

    def handle_fact_side(
        self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> PlansHandled:
        """Process one record of `plans.interest` (decisions come in process: `on_decided`)."""
        out = PlansHandled()
        self._on_interest(partition, offset, key, value or b"", out)
        return out

    def on_decided(self, key: bytes, record: dict[str, Any]) -> PlansHandled:
        """A decision the worker just made on this fact's partition (handed over in process).

        It never raises: what raises here is confined to the fact's plan state (dropped,
        its plans answered `rejected`), so the claims agent that made the decision goes on.
        """
        out = PlansHandled()
        try:
            if self._read is None:
                self._read = set(self.facts_table)
            if key not in self._read:
                return out  # no plan reads this fact
            try:
                view = DecisionView.from_record(record)
            except (PlanError, ValueError):  # never for the worker's own records; counted
                out.events.append("plan_unreadable_decision")
                return out
            self._on_view(key, view, out)
        except Exception as exc:
            self._quarantine_fact(key, exc, out)
        return out

    def _quarantine_fact(
        self, key: bytes, exc: Exception, out: PlansHandled, asking: str | None = None
    ) -> None:
        """A fact whose plan state raised: dropped, its readers (and `asking`) refused."""
        log.error("plan state of fact %r raised; it is dropped", key[:200], exc_info=exc)
        out.quarantined += 1
        reason = f"internal_error: {type(exc).__name__}: {exc}"[:500]
        plans: set[str] = {asking} if asking is not None else set()
        try:
            raw = self.facts_table.get(key)
            if raw is not None:
                plans |= set(FactInterest.from_obj(loads(raw)).plans)
        except Exception:  # the state itself is what fails: its readers are unknown
            log.warning("the plans reading fact %r are unknown; they are not told", key[:200])
        try:
            self._store_fact(key, None)
        except Exception:
            log.exception("dropping the plan state of fact %r failed", key[:200])
            self._read = None
        fact = key.decode(errors="replace")
        self._notices([Notice(pid, fact, None, reason) for pid in sorted(plans)], out)

    def _on_view(self, key: bytes, view: DecisionView, out: PlansHandled) -> None:
        state = FactInterest.from_obj(loads(self.facts_table[key]))
        new, notices = on_fact_decision(state, key.decode(), view)
        if notices:
            out.events.append("plan_fact_decision")
            self._store_fact(key, new)
            self._notices(notices, out)

    def _on_interest(
        self, partition: int, offset: int, key: bytes | None, value: bytes, out: PlansHandled
    ) -> None:
        """A plan starts or stops reading a fact: update its readers, answer an `add`."""
        try:
            op, plan_id, fact = interest_of(loads(value))
        except ValueError as exc:
            origin = (self.names.plans_interest, partition, offset)
            out.events.append("plan_dead_letter")
            reason = f"not a plan interest: {type(exc).__name__}: {exc}"
            out.sends.append(dead_letter(self.names, origin, key, value, reason))
            return
        wanted = fact.encode()
        home = misplaced(wanted, key, partition, self.partitions)
        if home is not None:
            out.sends.append(Outgoing(self.names.plans_interest, wanted, value, home))
            return
        try:
            raw = self.facts_table.get(wanted)
            state = FactInterest.from_obj(loads(raw)) if raw is not None else None
            current = _view_of(self.resolutions.get(wanted)) if op == "add" else None
            new, notices = on_interest(state, fact, op, plan_id, current)
            out.events.append("plan_interest")
            self._store_fact(wanted, new, raw)
        except Exception as exc:
            self._quarantine_fact(wanted, exc, out, plan_id if op == "add" else None)
            return
        if any(n.refused is not None for n in notices):
            out.events.append("plan_interest_refused")
        self._notices(notices, out)

    def _store_fact(
        self, key: bytes, state: FactInterest | None, held: bytes | None = None
    ) -> None:
        """Write (or delete, when no plan reads it) one fact's state; unchanged: no write.

        `held` is the stored state it was made from: a repeated or refused request, or
        a drop of a plan that was never registered, changes nothing and writes nothing
        (a fact read by many plans has a state of about 130 kB).
        """
        if state is None:
            self.facts_table.pop(key, None)
            if self._read is not None:
                self._read.discard(key)
        else:
            body = dumps(state.to_obj())
            if body != held:
                self.facts_table[key] = body
            if self._read is not None:
                self._read.add(key)

    def _notices(self, notices: list[Notice], out: PlansHandled) -> None:
        """Notices to `plans.updates`, each on its plan's home partition."""
        for notice in notices:
            key = notice.plan_id.encode()
            home = partition_for(key, self.partitions)
            out.sends.append(Outgoing(self.names.plans_updates, key, dumps(notice.to_obj()), home))


def _obj(view: DecisionView | None) -> dict[str, Any] | None:
    """A view as JSON (None stays None)."""
    return view.to_obj() if view is not None else None


def _restore(book: PlanBook, stored: Mapping[str, Any]) -> None:
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


def _plan_key(plan: Plan) -> bytes:
    return plan.plan_id.encode()
