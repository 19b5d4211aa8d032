"""The edge between Kafka records and the pure partition step: decode, route, encode outputs.

No Faust here: the agent hands in records and a fact store, and sends what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, MutableMapping

from claimwatch.core.alerts.shape import bounded_name
from claimwatch.core.claim import Claim, fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor
from claimwatch.core.signing import BAD_SIGNATURE, signature_problem
from claimwatch.core.state import FactState, content_hash
from claimwatch.core.step import Quarantined, StepResult
from claimwatch.wire.codec import decode_claim, dumps
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.claims.clock import PartitionClocks
from claimwatch.worker.claims.entries import StagedEntries
from claimwatch.worker.claims.facts import MemoryFacts, TableFacts
from claimwatch.worker.claims.handled import ClaimsHandled
from claimwatch.worker.claims.quarantine import set_aside_letters
from claimwatch.worker.claims.records import conflict_change, encoded, encoded_size
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.outgoing import Elsewhere, Outgoing
from claimwatch.worker.partition_state import forget_partitions
from claimwatch.worker.routing import decode_at_home
from claimwatch.worker.ticks import TICK_KEY, tick_time, tick_value

__all__ = ["ClaimsHandled", "Runtime", "conflict_change"]

log = logging.getLogger(__name__)


class Runtime:
    """Per-partition processors over one fact table; turns step results into records."""

    def __init__(
        self,
        policy: CompiledPolicy,
        names: TopicNames,
        partitions: int,
        table: MutableMapping[bytes, bytes],
        facts: TableFacts | MemoryFacts | None = None,
        lateness_us: int = 1_000_000,
        wall_clock_us: Callable[[], int] | None = None,
        alerts: bool = True,
        judge_arrivals: bool = True,
    ) -> None:
        #: whether claims are checked as they arrive (see `PartitionProcessor`)
        self.judge_arrivals = judge_arrivals
        #: whether decisions feed the detectors (entries staged per field, see `drain`)
        self.alerts = alerts
        self._entries = StagedEntries(names.alerts_input, partitions)
        self.policy = policy
        self.names = names
        self.partitions = partitions
        self.table = table
        self.facts = facts if facts is not None else TableFacts(table)
        self._processors: dict[int, PartitionProcessor] = {}
        #: partitions this runtime restored a processor for, forgotten since or not
        self._loaded: set[int] = set()
        #: partitions whose processor has not handled a record since it was (re)built
        #: (each with the restored facts that hold a decision, read once at the rebuild)
        self._fresh: dict[int, list[FactState]] = {}
        skew = int(policy.policy.defaults.clock_skew)
        self._clocks = PartitionClocks(table, skew, lateness_us, wall_clock_us)
        #: the claim being handled and its bytes as sent (its DLQ copy, if its fact fails)
        self._current: tuple[Claim, bytes] | None = None
        #: per partition, the stored facts that did not decode at its rebuild (set aside)
        self._unread: dict[int, StepResult] = {}

    @property
    def lateness_us(self) -> int:
        """How far a tick trails the wall clock it was written at (see `handle_claim`)."""
        return self._clocks.lateness_us

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop in-memory processors (on rebalance); they are rebuilt from the table."""
        self.facts.clear_cache()
        forget_partitions(self._processors, partitions)
        forget_partitions(self._fresh, partitions)

    def abandon(self, partition: int) -> None:
        """Drop what a failed record may have half changed in a partition.

        It is rebuilt from the table (the state after the last complete record) on its next
        record.
        """
        self.facts.discard()
        self._processors.pop(partition, None)
        self._fresh.pop(partition, None)

    def processor(self, partition: int) -> PartitionProcessor:
        """The processor of a partition, restored from the table on first use."""
        proc = self._processors.get(partition)
        if proc is None:
            clock = self._clocks.restored(partition)
            proc = PartitionProcessor(
                self.policy,
                partition,
                self.facts,
                clock,
                self.alerts,
                self.facts.memo,
                self.judge_arrivals,
                encoded_size,
            )
            states = list(self.facts.states_of(partition))
            proc.rebuild(states)
            self._processors[partition] = proc
            self._loaded.add(partition)
            self._fresh[partition] = [s for s in states if s.decided_offset is not None]
            for key, exc in self.facts.unreadable():  # set aside when the next record comes
                aside = self._unread.setdefault(partition, StepResult())
                proc.quarantine(key, exc, aside, clock or 0)
        return proc

    def handle(
        self,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp_us: int | None = None,
    ) -> ClaimsHandled:
        """Process one record of the claims topic (`timestamp_us`: the record's broker time).

        The detectors' entries of its decisions are staged, to be sent by `drain`.
        """
        out = self._handle(partition, offset, key, value, timestamp_us)
        self._stage(out)
        return out

    def _handle(
        self,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp_us: int | None,
    ) -> ClaimsHandled:
        out = ClaimsHandled()
        if value is None:
            out.events.append("tombstone")
            reason = "tombstone: a null value is not a claim (claims are never deleted)"
            out.sends.append(self._dead_letter(partition, offset, key, b"", reason))
            return out
        if key == TICK_KEY:
            return self._handle_tick(partition, offset, value, timestamp_us, out)
        origin = (self.names.claims, partition, offset)
        claim = decode_at_home(
            self.names, origin, key, value, decode_claim, _fact_key_bytes, self.partitions
        )
        if isinstance(claim, Elsewhere):
            out.elsewhere(claim)
            return out
        return self.handle_claim(partition, offset, claim, value, out, timestamp_us)

    def _handle_tick(
        self,
        partition: int,
        offset: int,
        value: bytes,
        timestamp_us: int | None,
        out: ClaimsHandled,
    ) -> ClaimsHandled:
        """A tick record: the clock moves at most to the record's broker time minus lateness.

        A malformed tick is ignored; a tick later than that bound (forged, or from a writer
        whose clock runs ahead of the broker's) moves the clock only to the bound. Both are
        counted as `bad_tick`.
        """
        at = tick_time(value)
        if at is None:
            out.events.append("bad_tick")
            return out
        timestamp_us = self._clocks.bounded(timestamp_us, out.events)
        if timestamp_us is not None and at > timestamp_us - self.lateness_us:
            out.events.append("bad_tick")
            at = timestamp_us - self.lateness_us
        proc = self._at(partition, offset, out, timestamp_us)
        before = proc.clock_us
        self._emit(proc.on_tick(at), partition, out)
        out.events.append("tick")
        self._stage(out)
        out.sends.extend(self.drain())  # the entries before the tick that moves past them
        if proc.clock_us is not None:
            # the detectors of this partition's fields move on with the partition clock
            out.sends.append(
                Outgoing(self.names.alerts_input, TICK_KEY, tick_value(proc.clock_us), partition)
            )
        self._clocks.store(proc, before, force=True)
        self._flush(out)
        return out

    def handle_claim(
        self,
        partition: int,
        offset: int,
        claim: Claim,
        value: bytes,
        out: ClaimsHandled | None = None,
        arrival_us: int | None = None,
    ) -> ClaimsHandled:
        """Process a decoded claim that is already in its home partition.

        `arrival_us` is when the claim reached the log (the record's timestamp; the claims
        topic is created with LogAppendTime, so the broker's clock). The partition clock is
        first moved to it minus the tick lateness, as a tick written at that moment would
        have: a backlog read after a pause, or a quiet gap, does not leave later claims
        "ahead of the clock", while a claim observed far beyond its own arrival still is.
        """
        out = out if out is not None else ClaimsHandled()
        self._current = (claim, value)
        try:
            return self._handle_claim(partition, offset, claim, value, out, arrival_us)
        finally:
            self._current = None

    def _handle_claim(
        self,
        partition: int,
        offset: int,
        claim: Claim,
        value: bytes,
        out: ClaimsHandled,
        arrival_us: int | None,
    ) -> ClaimsHandled:
        arrival_us = self._clocks.bounded(arrival_us, out.events)
        proc = self._at(partition, offset, out, arrival_us)
        before = proc.clock_us
        if arrival_us is not None:
            self._emit(proc.on_tick(arrival_us - self.lateness_us), partition, out)
        key = claim.fact_key.encode()
        unsigned = signature_problem(self.policy, claim.envelope)
        if unsigned is not None:  # DLQ only: never decided, its id never marked seen
            out.events.append(BAD_SIGNATURE)
            out.sends.append(self._dead_letter(partition, offset, key, value, unsigned))
            out.refused.append((claim.claim_id, unsigned))
            self._clocks.store(proc, before)
            self._flush(out)
            return out
        out.claim = claim
        step = proc.on_claim(claim)
        for reason in step.dead_letters:
            out.sends.append(self._dead_letter(partition, offset, key, value, reason))
        if step.dead_letters and not self._holds(claim):
            out.refused.extend((claim.claim_id, reason) for reason in step.dead_letters)
        self._emit(step, partition, out)
        self._clocks.store(proc, before)
        self._flush(out)
        return out

    def _flush(self, out: ClaimsHandled) -> None:
        """Write the changed facts to the table; a fact that cannot be written is set aside."""
        for key, state, exc in self.facts.flush():
            proc = self.processor(state.partition)
            aside = StepResult()
            proc.quarantine(key, exc, aside, proc.clock_us or 0, state)
            self._emit(aside, state.partition, out)
        if out.quarantined:
            self.facts.flush()  # the set-aside facts are gone: nothing of theirs is left

    def _holds(self, claim: Claim) -> bool:
        """Whether the claim's fact holds this claim (so a decision of it will list it)."""
        try:
            state = self.facts.get(claim.fact_key)
        except Exception:  # a state that does not decode holds nothing (it is set aside)
            return False
        return state is not None and state.seen_hash(claim.claim_id) == content_hash(claim.envelope)

    def _at(
        self, partition: int, offset: int, out: ClaimsHandled, timestamp_us: int | None = None
    ) -> PartitionProcessor:
        """The processor of a partition, positioned at an input offset.

        The first record a rebuilt processor sees re-sends the decisions made from that
        offset on (see PartitionProcessor.resend_since), and repairs a stored clock that is
        further ahead of this record's broker time than any tick or claim could have moved
        it (see `PartitionClocks.repair`).
        """
        proc = self.processor(partition)
        proc.position = offset
        restored = self._fresh.pop(partition, None)
        if restored is not None:
            self._clocks.repair(proc, timestamp_us, out.events)
            self._emit(proc.resend_since(restored, offset), partition, out)
        unread = self._unread.pop(partition, None)
        if unread is not None:
            self._emit(unread, partition, out)
        return proc

    def held(self) -> list[int]:
        """The partitions this runtime keeps a processor for, in order."""
        return sorted(self._processors)

    def flush_in(self, most: int) -> Iterator[ClaimsHandled]:
        """End of input: close the open windows of every partition, in partition order.

        A partition no record reached since this runtime began is restored and flushed
        too: its stored facts (a resumed replay, a restart) may hold open windows. One
        already finished and forgotten (`flush_partition_in`, then `forget`) is not.
        """
        for partition in range(self.partitions):
            if partition in self._processors or partition not in self._loaded:
                yield from self.flush_partition_in(partition, most)

    def flush_partition_in(self, partition: int, most: int) -> Iterator[ClaimsHandled]:
        """End of one partition's input: its open windows closed at their deadlines.

        In parts of at most `most` decisions (see `PartitionProcessor.flush_in`).
        """
        proc = self.processor(partition)
        for step in proc.flush_in(most):
            out = ClaimsHandled()
            self._emit(step, partition, out)
            yield out
        out = ClaimsHandled()
        self._flush(out)
        if out.sends:
            yield out

    def _stage(self, out: ClaimsHandled) -> None:
        self._entries.stage(out.alerts)

    def staged_full(self) -> bool:
        """Whether some field has a whole record's worth of entries staged."""
        return self._entries.full()

    def drain(self) -> list[Outgoing]:
        """The alerts-input records of the entries staged since the last drain.

        One record per field (more past ENTRIES_PER_RECORD), to the field's home partition:
        claims cost the detectors a few records a second instead of one per decision. The
        worker drains before each tick's record (about once a second), and at the end of a
        batch when a record is full or a second has gone by.
        """
        return self._entries.drain()

    def _emit(self, step: StepResult, partition: int, out: ClaimsHandled) -> None:
        out.events.extend(step.events)
        for aside in step.quarantined:
            self._set_aside(aside, partition, out)
        for decided in step.decisions:
            record = decided.record
            name = fact_key(record["subject"], record["field"])
            key = name.encode()
            try:
                body = encoded(key, record)
            except Exception as exc:  # confined to the fact: decided `rejected` instead
                if any(q.record is record for q in step.quarantined):
                    raise  # a set-aside fact's own record: the record guard's to handle
                proc = self.processor(partition)
                instead = StepResult()
                proc.quarantine(name, exc, instead, proc.clock_us or 0)
                self._emit(instead, partition, out)
                continue
            out.decided.append(decided)
            out.bodies.append(body)
            out.sends.append(Outgoing(self.names.decisions, key, body, partition))
            out.resolutions.append((key, body))
            if decided.again:
                continue  # the detectors and the conflicts log saw it, or tolerate the gap
            if decided.alert is not None:
                out.alerts.append((bounded_name(str(record["field"])), decided.alert))
            change = conflict_change(decided)
            if change is not None:
                out.sends.append(Outgoing(self.names.conflicts, key, dumps(change), partition))

    def _set_aside(self, aside: Quarantined, partition: int, out: ClaimsHandled) -> None:
        """Dead-letter the claims of a quarantined fact, one record each; log it once."""
        log.error(
            "fact %r set aside (decided rejected, %d claim(s) dead-lettered): %s",
            aside.key[:200],
            len(aside.claims),
            aside.reason,
            exc_info=aside.error,
        )
        out.quarantined.append(aside)
        offset = self._processors[partition].position if partition in self._processors else None
        out.sends.extend(
            set_aside_letters(self.names, aside, partition, offset or 0, self._current)
        )

    def _dead_letter(
        self, partition: int, offset: int, key: bytes | None, value: bytes, reason: str
    ) -> Outgoing:
        origin = (self.names.claims, partition, offset)
        return dead_letter(self.names, origin, key, value, reason)


def _fact_key_bytes(claim: Claim) -> bytes:
    return claim.fact_key.encode()
