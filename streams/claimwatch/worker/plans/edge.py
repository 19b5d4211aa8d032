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

from claimwatch.core.plan_facts import Notice, notice_of
from claimwatch.core.plans import (
    Plan,
    PlanBook,
    Step,
    StepStatus,
    on_decision,
    on_plan,
    on_remove,
    rejected,
)
from claimwatch.models.plan import PlanRecord
from claimwatch.wire.codec import decode_model, dumps, loads
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.outgoing import Elsewhere, Outgoing
from claimwatch.worker.partition_state import PerPartition
from claimwatch.worker.plans.fact_side import FactSide
from claimwatch.worker.plans.handled import PlansHandled
from claimwatch.worker.plans.stored import (
    MAX_STORED_PLAN_BYTES,
    PLAN_PREFIX,
    restore,
    stored_record,
)
from claimwatch.worker.routing import decode_at_home

__all__ = ["PLAN_PREFIX", "PlansEdge", "PlansHandled", "decode_plan"]

#: Largest plan message accepted (bytes).
MAX_PLAN_BYTES: Final = 256 * 1024

log = logging.getLogger(__name__)


def decode_plan(raw: bytes) -> Plan:
    """Parse one plan; raise DecodeError with a reason a human can act on."""
    record = decode_model(raw, PlanRecord, "a plan", MAX_PLAN_BYTES)
    steps = tuple(Step.of(s.step_id, s.reads, s.irreversible) for s in record.steps)
    return Plan(record.plan_id, steps)


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
    _facts: FactSide = field(init=False)
    #: stored plans that did not restore since the last record (dropped, counted with it)
    _unrestored: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._books = PerPartition(self._restored_book)
        self._facts = FactSide(self.names, self.partitions, self.facts_table, self.resolutions)

    # ------------------------------------------------------------------ plan side

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop in-memory plan books (on rebalance, after recovery); rebuilt from the table."""
        self._books.forget(partitions)
        self._facts.forget()

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
                    restore(book, stored)
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
            out.undecodable(self.names, origin, key, value, "a plan update", exc)
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
            body = dumps(stored_record(partition, book, plan))
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
        return self._facts.handle(topic, partition, offset, key, value)

    def on_decided(self, key: bytes, record: dict[str, Any]) -> PlansHandled:
        """A decision the worker just made on this fact's partition (handed over in process).

        It never raises (see `FactSide.on_decided`).
        """
        return self._facts.on_decided(key, record)


def _plan_key(plan: Plan) -> bytes:
    return plan.plan_id.encode()
