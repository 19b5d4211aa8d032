"""The fact side of plan blocking: per fact some plan reads, its readers; decisions passed on.

Keyed by fact key (the home partition of the fact, with `claims`, `decisions` and
`resolutions`): a plan's interest in a fact (topic `plans.interest`) is answered at once
with the fact's current decision, and every newer decision the claims agent makes here is
passed to each reading plan, on `plans.updates` (see `plans.edge`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from claimwatch.core.plan_facts import (
    FactInterest,
    Notice,
    interest_of,
    on_fact_decision,
    on_interest,
)
from claimwatch.core.plans import DecisionView, PlanError
from claimwatch.wire.codec import dumps, loads
from claimwatch.wire.partitioning import misplaced, partition_for
from claimwatch.wire.topic_names import TopicNames
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.plans.handled import PlansHandled

log = logging.getLogger(__name__)


class FactSide:
    """The readers of each fact over one bytes table, and the latest decisions table."""

    def __init__(
        self,
        names: TopicNames,
        partitions: int,
        facts_table: MutableMapping[bytes, bytes],
        resolutions: Mapping[bytes, bytes],
    ) -> None:
        self.names = names
        self.partitions = partitions
        #: one `FactInterest` per fact key some plan reads
        self.facts_table = facts_table
        #: the worker's table of the latest decision per fact (read only)
        self.resolutions = resolutions
        #: the keys of `facts_table` (facts some plan reads), listed on first use after each
        #: `forget` and kept with every write here: a decision of a fact no plan reads (nearly
        #: every decision) is passed over without a store lookup
        self._read: set[bytes] | None = None

    def forget(self) -> None:
        """Drop the in-memory list of the facts read (on rebalance, after recovery)."""
        self._read = None

    def handle(
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
            out.undecodable(self.names, origin, key, value, "a plan interest", exc)
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


def _view_of(raw: bytes | None) -> DecisionView | None:
    """The view of a stored decision record (None when absent or unusable)."""
    if raw is None:
        return None
    try:
        return DecisionView.from_record(loads(raw))
    except (PlanError, ValueError):
        return None
