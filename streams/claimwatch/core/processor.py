"""The stream step of one claims partition: partition clock, decision windows, expiry, dedupe.

Pure: the caller passes the fact store (any mutable mapping of fact key -> FactState, such
as a dict in tests or a view over a Faust table) and gets back what to send. Time comes
only from the records: claims' `observed_at` and tick records (docs/concepts.md#time).
"""

from __future__ import annotations

import contextlib
import heapq
import sys
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import replace

from claimwatch.core.alerts.entry import entry_of
from claimwatch.core.claim import Claim
from claimwatch.core.contract import check
from claimwatch.core.freshness import stale_at
from claimwatch.core.policy import CompiledPolicy, FieldRule
from claimwatch.core.precedence import UNREGISTERED_ONLY, unregistered_only
from claimwatch.core.prune import Pruning
from claimwatch.core.quarantine import set_aside
from claimwatch.core.resolve import resolve, resolve_entries
from claimwatch.core.size import SizeOf, claim_size, over_budget
from claimwatch.core.state import FactState, content_hash
from claimwatch.core.step import Decided, Quarantined, StepResult
from claimwatch.models.durations import UNTIL_EDITED, format_duration

__all__ = ["Decided", "PartitionProcessor", "StepResult"]

#: The deadline index is rebuilt without its superseded entries once they outnumber the
#: live ones by this many (a deadline moved earlier leaves the fact's older entry behind).
COMPACT_SLACK = 1_024

#: A deadline index entry: when, and which fact.
Due = tuple[int, str]


class PartitionProcessor(Pruning):
    """Decides the facts of one claims partition on that partition's clock (and prunes them)."""

    def __init__(
        self,
        policy: CompiledPolicy,
        partition: int,
        facts: MutableMapping[str, FactState],
        clock_us: int | None = None,
        alerts: bool = False,
        memo: bool = False,
        judge_arrivals: bool = True,
        size_of: SizeOf = claim_size,
    ) -> None:
        super().__init__(policy, size_of)
        #: whether each claim's contract is checked as it arrives, to count and dead-letter
        #: the rejected ones (a replay does not: a decision checks its claims anyway, and
        #: a rejected claim is decided `rejected` all the same; it is counted `kept`)
        self.judge_arrivals = judge_arrivals
        #: whether claims keep their clock-free checks in their memo (`contract.check`):
        #: for a store that keeps claims live between records, not for one that holds all
        self.memo = memo
        #: whether each new decision carries its detectors' entry (see core.alerts.entry)
        self.alerts = alerts
        self.partition = partition
        self.facts = facts
        self.clock_us = clock_us
        #: input offset of the record being processed (recorded with each decision)
        self.position: int | None = None
        self._due: list[Due] = []
        #: each fact's one live entry in the deadline index: at or before the fact's
        #: `due_us` (a deadline moved later keeps its entry, which `_close_due` moves on
        #: when it comes up; one moved earlier gets a new entry: see `_schedule`)
        self._latest: dict[str, Due] = {}

    def rebuild(self, states: Iterable[FactState]) -> None:
        """Re-index the pending deadlines of restored facts (after recovery)."""
        self._due = [(s.due_us, s.key) for s in states if s.due_us is not None]
        heapq.heapify(self._due)
        self._latest = {entry[1]: entry for entry in self._due}

    def resend_since(self, states: Iterable[FactState], offset: int) -> StepResult:
        """Re-send, after a restart at input `offset`, the decisions made from there on.

        The last decision of every fact that was made by a record at or after `offset` may
        never have reached the log (at-least-once: the state survived, the output may not
        have). Consumers drop the repeated id. A decision that the current claims no longer
        reproduce is skipped: a newer one is on its way.
        """
        result = StepResult()
        for state in sorted(states, key=lambda s: s.key):
            if state.decided_offset is None or state.decided_offset < offset:
                continue
            if state.decided_at is None or not state.claims:
                continue
            try:
                record = resolve(state.claims, self.policy, state.decided_at)
            except Exception as exc:
                self.quarantine(state.key, exc, result, state.decided_at, state)
                continue
            if record["decision_id"] == state.last_id:
                result.decisions.append(Decided(record, None, None, again=True))
        return result

    def on_tick(self, tick_us: int) -> StepResult:
        """A tick moves the clock on and closes whatever deadlines it passes."""
        result = StepResult()
        if self.clock_us is None or tick_us > self.clock_us:
            self.clock_us = tick_us
        self._close_due(result)
        return result

    def flush(self) -> StepResult:
        """End of input: close every open decision window at its deadline (no expiry)."""
        (result,) = self.flush_in(sys.maxsize)
        return result

    def flush_in(self, most: int) -> Iterator[StepResult]:
        """`flush`, as results of at most `most` decisions each (the last may hold none).

        The end of a long input closes the windows of nearly every fact at once: taken in
        parts, their decision records need not all be held together.
        """
        result = StepResult()
        pending = []  # the open windows, by deadline (a fact's entry may be earlier)
        for key in list(self._latest):
            state = self._state(key, result)
            if state is not None and state.due_us is not None and state.window is not None:
                pending.append((state.due_us, key, state))
        pending.sort(key=lambda item: (item[0], item[1]))
        for due, _key, state in pending:
            self._decide(state, due, result)
            if len(result.decisions) >= most:
                yield result
                result = StepResult()
        self._latest = {k: e for k, e in self._latest.items() if k in self.facts}
        self._compact()
        yield result

    def on_claim(self, claim: Claim) -> StepResult:
        """Accept one claim: move the clock, close passed deadlines, then add the claim."""
        result = StepResult()
        rule = self.policy.rule(claim.field)
        arrival_error = self._advance(claim, rule)
        self._close_due(result)
        try:
            self._add(claim, rule, arrival_error, result)
        except Exception as exc:  # confined to the claim's fact
            self.quarantine(claim.fact_key, exc, result, self._now(), None, claim)
        self._close_due(result)
        return result

    def quarantine(
        self,
        key: str,
        exc: BaseException,
        out: StepResult,
        at_us: int,
        state: FactState | None = None,
        claim: Claim | None = None,
    ) -> None:
        """Set a fact aside: decided `rejected` (`internal_error: ...`), its state dropped.

        Whatever raised while the fact was checked, decided, pruned or stored stays with it:
        its decision lists every claim `rejected` with the reason (made of plain strings, so
        it cannot fail the same way), the step reports it in `quarantined` (its claims go
        to the DLQ, the exception is logged by the edge) and the rest of the partition goes
        on. `state`: the fact's state as the failing step held it (else it is read, when it
        can be); `claim`: the claim being added, when that is what failed.
        """
        if state is None:
            try:
                state = self.facts.get(key)
            except Exception:  # the stored state itself does not decode
                state = None
        claims = list(state.claims) if state is not None else []
        if claim is not None and all(c is not claim for c in claims):
            claims.append(claim)
        self._latest.pop(key, None)  # its deadline index entries are skipped from now on
        with contextlib.suppress(KeyError):
            del self.facts[key]
        reason, record = set_aside(self.policy, key, claims, exc, at_us)
        previous = (state.last_outcome, state.last_id) if state is not None else (None, None)
        out.decisions.append(Decided(record, *previous))
        field_name = record["field"]
        out.quarantined.append(Quarantined(key, field_name, reason, claims, exc, record))
        out.events.append("quarantined")

    def _state(self, key: str, out: StepResult) -> FactState | None:
        """The stored state of a fact; one that cannot be read is quarantined (None)."""
        try:
            return self.facts.get(key)
        except Exception as exc:
            self.quarantine(key, exc, out, self._now())
            return None

    # ------------------------------------------------------------------ internals

    def _advance(self, claim: Claim, rule: FieldRule) -> str | None:
        observed = claim.observed_us
        if observed is None:
            return None
        if self.clock_us is None:
            self.clock_us = observed
            return None
        ahead = observed - self.clock_us
        if ahead > rule.clock_skew_us:
            return (
                f"observed {format_duration(ahead)} ahead of the partition clock "
                f"(allowed skew {format_duration(rule.clock_skew_us)})"
            )
        if ahead > 0:
            self.clock_us = observed
        return None

    def _add(
        self, claim: Claim, rule: FieldRule, arrival_error: str | None, out: StepResult
    ) -> None:
        key = claim.fact_key
        state = self.facts.get(key)
        if state is None:
            state = FactState(claim.subject, claim.field, self.partition)
        known = state.seen_hash(claim.claim_id)
        if known is not None:
            if known == content_hash(claim.envelope):
                out.events.append("duplicate")
                # written again as it is: a store that kept this claim while the changelog
                # record of it was lost (a crash between the two) gives it to the changelog
                # now, as its input is read again; a restore from the changelog keeps it
                self.facts[key] = state
            else:
                out.events.append("conflicting_duplicate")
                out.dead_letters.append(
                    f"claim_id {claim.claim_id!r} was already used for this fact with other content"
                )
            return
        now = self._now()
        size = self.size_of(claim)
        self._prune(state, rule, now)
        refused = over_budget(size, state.held_bytes(self.size_of))
        if refused is not None:  # DLQ only: never decided, its id not marked seen
            out.events.append("over_budget")
            out.dead_letters.append(refused)
            return
        # every claim stays until its fact's next decision lists it (one already past
        # freshness + grace is listed `stale`); pruning may drop it after that
        if claim.observed_us is not None and claim.observed_us < now - rule.horizon_us:
            out.events.append("stale_on_arrival")
        state.unlisted.add(claim.claim_id)
        if not rule.known:
            out.events.append("unknown_field")
        if arrival_error is not None:
            claim = replace(claim, arrival_error=arrival_error)
        elif self.judge_arrivals:
            arrival_error = check(claim, rule, now, self.memo).error
        if arrival_error is not None:
            out.events.append("rejected")
            out.dead_letters.append(arrival_error)
        else:
            out.events.append("accepted" if self.judge_arrivals else "kept")
        state.claims.append(claim)
        state.add_bytes(size)
        opened, _ = state.window if state.window is not None else (now, now)
        state.window = (opened, now)
        self._prune(state, rule, now, added=True)
        self._schedule(state, min(now + rule.settle_us, opened + rule.max_delay_us))
        if claim.on_arrival:
            self._decide_early(state, now, out)
        self.facts[key] = state

    def _close_due(self, out: StepResult) -> None:
        clock = self.clock_us
        if clock is None:
            return
        due_index, latest = self._due, self._latest
        while due_index and due_index[0][0] <= clock:
            entry = heapq.heappop(due_index)
            due, key = entry
            if latest.get(key) is not entry:
                continue  # superseded by an earlier deadline
            del latest[key]
            state = self._state(key, out)
            if state is None or state.due_us is None:
                continue  # decided meanwhile (or gone)
            if state.due_us != due:  # moved on since: its entry goes where it now is
                later = (state.due_us, key)
                heapq.heappush(due_index, later)
                latest[key] = later
                continue
            self._decide(state, due, out)

    def _decide(self, state: FactState, at_us: int, out: StepResult) -> None:
        """Decide a fact at clock time `at_us`; a failure is confined to it (`quarantine`)."""
        try:
            self._decide_fact(state, at_us, out)
        except Exception as exc:
            self.quarantine(state.key, exc, out, at_us, state)

    def _decide_fact(self, state: FactState, at_us: int, out: StepResult) -> None:
        rule = self.policy.rule(state.field)
        state.window = None
        state.due_us = None
        self._prune(state, rule, at_us)
        if not state.claims:
            del self.facts[state.key]
            return
        self._emit(state, at_us, out)
        if state.unlisted:  # listed in a decision now: pruning may drop them from here on
            state.unlisted.clear()
            state.pruned_at = None
        expiry = _next_expiry(state.claims, rule, at_us)
        if expiry is not None:
            self._schedule(state, expiry)
        self.facts[state.key] = state

    def _decide_early(self, state: FactState, now: int, out: StepResult) -> None:
        """Decide a fact at once on the claims it holds, its window left open.

        Asked by a claim (`"decide": "on_arrival"`) whose agent does not wait for the
        window. Nothing else of the state moves: the window keeps its deadline, and no
        claim becomes prunable (`unlisted` stays), so the window's close decides as it
        would have without this decision, and is emitted when its id differs.
        """
        self._emit(state, now, out)

    def _emit(self, state: FactState, at_us: int, out: StepResult) -> None:
        """Resolve the fact's claims at `at_us`; a decision whose id is new is sent."""
        record, resolved = resolve_entries(
            state.claims, self.policy, at_us, self.memo, distinct=True
        )
        if record["decision_id"] == state.last_id:
            return
        entry = None
        if self.alerts:
            state.track, entry = entry_of(
                self.policy, state.track, record, state.last_outcome, at_us, resolved
            )
        out.decisions.append(Decided(record, state.last_outcome, state.last_id, alert=entry))
        if unregistered_only(record):
            out.events.append(UNREGISTERED_ONLY)
        state.last_id, state.last_outcome = record["decision_id"], record["outcome"]
        state.decided_offset, state.decided_at = self.position, at_us

    def _schedule(self, state: FactState, due_us: int) -> None:
        if state.due_us is not None and state.due_us <= due_us and state.window is None:
            return
        state.due_us = due_us
        key = state.key
        entry = self._latest.get(key)
        if entry is not None and entry[0] <= due_us:
            return  # a later deadline: the fact's entry is moved on to it when it comes up
        entry = (due_us, key)
        heapq.heappush(self._due, entry)
        self._latest[key] = entry
        if len(self._due) > 2 * len(self._latest) + COMPACT_SLACK:
            self._compact()

    def _compact(self) -> None:
        """Drop the superseded entries of the deadline index (`_close_due` skips them).

        A fact's entry is superseded when its deadline moves earlier (a window opened
        before a pending expiry); a deadline moved later keeps its entry. The facts are
        not read: a store may have to decode them.
        """
        self._due = [e for e in self._due if self._latest.get(e[1]) is e]
        heapq.heapify(self._due)

    def _now(self) -> int:
        return self.clock_us if self.clock_us is not None else 0


def _next_expiry(claims: list[Claim], rule: FieldRule, at_us: int) -> int | None:
    if rule.freshness_us >= UNTIL_EDITED:
        return None
    moments = [
        stale_at(c.observed_us, rule.freshness_us)
        for c in claims
        if c.observed_us is not None
        and c.is_evidence
        and c.arrival_error is None
        and c.superseded is None
    ]
    upcoming = [m for m in moments if m > at_us]
    return min(upcoming) if upcoming else None
