"""The edge between Kafka records and the pure partition step: decode, route, encode outputs.

No Faust here: the agent hands in records and a fact store, and sends what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from streams.core.alerts.entry import Entry
from streams.core.claim import Claim, fact_key
from streams.core.limits import fit_for_json
from streams.core.policy import CompiledPolicy
from streams.core.processor import Decided, PartitionProcessor, Quarantined, StepResult
from streams.core.signing import BAD_SIGNATURE, signature_problem
from streams.core.size import canonical_bytes
from streams.core.state import FactState, content_hash
from streams.wire.codec import decode_claim, dumps
from streams.wire.topics import TopicNames, partition_for
from streams.worker.claims.facts import MemoryFacts, TableFacts
from streams.worker.edge import (
    DLQ_MAX_BYTES,
    TICK_KEY,
    Elsewhere,
    Handled,
    Outgoing,
    dead_letter,
    decode_at_home,
    forget_partitions,
    tick_time,
    tick_value,
)

#: The prefix of bookkeeping keys in the fact table.
CLOCK_PREFIX: Final = b"\x00clock/"
#: Largest decision record sent (key and value), below the producer's request limit. The
#: core keeps a fact's claims within a byte budget (see streams.core.size); a record past
#: this is a fault confined to its fact (decided `rejected` instead), never a crash.
MAX_RECORD_BYTES: Final = DLQ_MAX_BYTES

log = logging.getLogger(__name__)


class RecordTooLarge(ValueError):
    """A decision record that would pass MAX_RECORD_BYTES."""


@dataclass(slots=True)
class ClaimsHandled(Handled):
    """What one input record led to: records to send, table writes, counters."""

    resolutions: list[tuple[bytes, bytes]] = field(default_factory=list)
    decided: list[Decided] = field(default_factory=list)
    #: the JSON of each decided record, in the same order (serialized once, here)
    bodies: list[bytes] = field(default_factory=list)
    claim: Claim | None = None
    #: the detectors' entry of each new decision, with its field (sent per field, batched)
    alerts: list[tuple[str, Entry]] = field(default_factory=list)
    #: (claim id, reason) of each claim dead-lettered with no decision to come (a bad
    #: signature, a conflicting duplicate, a claim over its fact's byte budget): its
    #: waiters are answered with the reason at once (see worker.claims.waiting). The claims
    #: of a quarantined fact are not here: its `rejected` decision lists them
    refused: list[tuple[str, str]] = field(default_factory=list)
    #: the facts set aside while handling this record (each logged once, counted)
    quarantined: list[Quarantined] = field(default_factory=list)


#: How far a partition clock moves on between two writes of it by claims (1 s).
CLOCK_STEP_US: Final = 1_000_000
#: Most detector entries in one alerts-input record (a record stays far below 1 MB).
ENTRIES_PER_RECORD: Final = 500


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
        self.lateness_us = lateness_us
        #: whether claims are checked as they arrive (see `PartitionProcessor`)
        self.judge_arrivals = judge_arrivals
        #: whether decisions feed the detectors (entries staged per field, see `drain`)
        self.alerts = alerts
        self._entries: dict[str, list[Entry]] = {}
        #: the worker's wall clock (injected; None in replay and tests: no clock repair)
        self.wall_clock_us = wall_clock_us
        self.policy = policy
        self.names = names
        self.partitions = partitions
        self.table = table
        self.facts = facts if facts is not None else TableFacts(table)
        self._processors: dict[int, PartitionProcessor] = {}
        #: partitions whose processor has not handled a record since it was (re)built
        #: (each with the restored facts that hold a decision, read once at the rebuild)
        self._fresh: dict[int, list[FactState]] = {}
        #: the clock last written to the table, per partition
        self._stored_clock: dict[int, int] = {}
        #: how far claims may legitimately move a clock past the broker's time
        self._max_skew_us = int(policy.policy.defaults.clock_skew)
        #: the claim being handled and its bytes as sent (its DLQ copy, if its fact fails)
        self._current: tuple[Claim, bytes] | None = None
        #: per partition, the stored facts that did not decode at its rebuild (set aside)
        self._unread: dict[int, StepResult] = {}

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
            raw = self.table.get(CLOCK_PREFIX + str(partition).encode())
            clock = int(raw) if raw is not None else None
            if clock is not None:
                self._stored_clock[partition] = clock
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
        timestamp_us = self._bounded(timestamp_us, out)
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
        self._store_clock(proc, before, force=True)
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
        arrival_us = self._bounded(arrival_us, out)
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
            self._store_clock(proc, before)
            self._flush(out)
            return out
        out.claim = claim
        step = proc.on_claim(claim)
        for reason in step.dead_letters:
            out.sends.append(self._dead_letter(partition, offset, key, value, reason))
        if step.dead_letters and not self._holds(claim):
            out.refused.extend((claim.claim_id, reason) for reason in step.dead_letters)
        self._emit(step, partition, out)
        self._store_clock(proc, before)
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

    def _bounded(self, stamp_us: int | None, out: ClaimsHandled) -> int | None:
        """A record time trusted no further than the wall clock plus `clock_skew`.

        A CreateTime record (written before the worker set its topic to LogAppendTime, or
        on a topic it could not fix) carries whatever time its writer chose; a later time
        is taken as the bound and counted `clock_capped`. Without a wall clock (replay)
        record times are taken as they are: on a LogAppendTime topic the broker stamped
        them before the worker read them, so the cap fires only when the broker's clock
        runs ahead of the worker's by more than the skew, and the counter says so.
        """
        if stamp_us is None or self.wall_clock_us is None:
            return stamp_us
        bound = self.wall_clock_us() + self._max_skew_us
        if stamp_us <= bound:
            return stamp_us
        out.events.append("clock_capped")
        return bound

    def _at(
        self, partition: int, offset: int, out: ClaimsHandled, timestamp_us: int | None = None
    ) -> PartitionProcessor:
        """The processor of a partition, positioned at an input offset.

        The first record a rebuilt processor sees re-sends the decisions made from that
        offset on (see PartitionProcessor.resend_since), and repairs a stored clock that is
        further ahead of this record's broker time than any tick or claim could have moved
        it (see `_repair_clock`).
        """
        proc = self.processor(partition)
        proc.position = offset
        restored = self._fresh.pop(partition, None)
        if restored is not None:
            self._repair_clock(proc, timestamp_us, out)
            self._emit(proc.resend_since(restored, offset), partition, out)
        unread = self._unread.pop(partition, None)
        if unread is not None:
            self._emit(unread, partition, out)
        return proc

    def _repair_clock(
        self, proc: PartitionProcessor, timestamp_us: int | None, out: ClaimsHandled
    ) -> None:
        """Bring back a stored clock that is ahead of the wall clock by more than the skew.

        No tick (written at wall time minus lateness, bounded by broker time) nor accepted
        claim can put it there; only a forged tick accepted by an older release can. It is
        set to this record's broker time minus the lateness, as a tick of this record would.
        """
        if self.wall_clock_us is None or proc.clock_us is None:
            return
        now = self.wall_clock_us()
        if proc.clock_us > now + self._max_skew_us:
            out.events.append("clock_repaired")
            stamp = timestamp_us if timestamp_us is not None else now
            proc.clock_us = min(stamp, now) - self.lateness_us
            self._store_clock(proc, None, force=True)

    def held(self) -> list[int]:
        """The partitions this runtime keeps a processor for, in order."""
        return sorted(self._processors)

    def flush_in(self, most: int) -> Iterator[ClaimsHandled]:
        """End of input: close the open windows of every partition, in partition order."""
        for partition in self.held():
            yield from self.flush_partition_in(partition, most)

    def flush_partition_in(self, partition: int, most: int) -> Iterator[ClaimsHandled]:
        """End of one partition's input: its open windows closed at their deadlines.

        In parts of at most `most` decisions (see `PartitionProcessor.flush_in`).
        """
        proc = self._processors.get(partition)
        if proc is not None:
            for step in proc.flush_in(most):
                out = ClaimsHandled()
                self._emit(step, partition, out)
                yield out
        out = ClaimsHandled()
        self._flush(out)
        if out.sends:
            yield out

    def _stage(self, out: ClaimsHandled) -> None:
        for name, entry in out.alerts:
            self._entries.setdefault(name, []).append(entry)
        out.alerts.clear()

    def staged_full(self) -> bool:
        """Whether some field has a whole record's worth of entries staged."""
        return any(len(e) >= ENTRIES_PER_RECORD for e in self._entries.values())

    def drain(self) -> list[Outgoing]:
        """The alerts-input records of the entries staged since the last drain.

        One record per field (more past ENTRIES_PER_RECORD), to the field's home partition:
        claims cost the detectors a few records a second instead of one per decision. The
        worker drains before each tick's record (about once a second), and at the end of a
        batch when a record is full or a second has gone by.
        """
        sends = []
        for name, entries in self._entries.items():
            key = name.encode()
            home = partition_for(key, self.partitions)
            for at in range(0, len(entries), ENTRIES_PER_RECORD):
                part = entries[at : at + ENTRIES_PER_RECORD]
                body = dumps({"field": name, "entries": part})
                sends.append(Outgoing(self.names.alerts_input, key, body, home))
        self._entries.clear()
        return sends

    def _store_clock(
        self, proc: PartitionProcessor, before: int | None, *, force: bool = False
    ) -> None:
        """Write a partition's clock to the table when it moved on by CLOCK_STEP_US.

        Claims move the clock with every arrival; writing it each time doubled the changelog
        records per claim (and so the records a moved partition must restore). Ticks write
        it always (about once a second). A restarted partition may so start at most
        CLOCK_STEP_US behind; its next record moves it to that record's broker time anyway.
        """
        clock = proc.clock_us
        if clock is None or clock == before:
            return
        stored = self._stored_clock.get(proc.partition)
        if force or stored is None or clock - stored >= CLOCK_STEP_US:
            self.table[CLOCK_PREFIX + str(proc.partition).encode()] = str(clock).encode()
            self._stored_clock[proc.partition] = clock

    def _emit(self, step: StepResult, partition: int, out: ClaimsHandled) -> None:
        out.events.extend(step.events)
        for aside in step.quarantined:
            self._set_aside(aside, partition, out)
        for decided in step.decisions:
            record = decided.record
            name = fact_key(record["subject"], record["field"])
            key = name.encode()
            try:
                body = _encoded(key, record)
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
                out.alerts.append((str(record["field"]), decided.alert))
            change = conflict_change(decided)
            if change is not None:
                out.sends.append(Outgoing(self.names.conflicts, key, dumps(change), partition))

    def _set_aside(self, aside: Quarantined, partition: int, out: ClaimsHandled) -> None:
        """Dead-letter the claims of a quarantined fact, one record each; log it once.

        Each DLQ record carries the fact's key and the reason; its value is the claim's bytes
        as sent when it is the claim being handled, else its envelope as stored.
        """
        log.error(
            "fact %r set aside (decided rejected, %d claim(s) dead-lettered): %s",
            aside.key[:200],
            len(aside.claims),
            aside.reason,
            exc_info=aside.error,
        )
        out.quarantined.append(aside)
        offset = self._processors[partition].position if partition in self._processors else None
        key = aside.key.encode()
        current = self._current
        for claim in aside.claims:
            if current is not None and claim is current[0]:
                raw = current[1]
            else:
                raw = _envelope_bytes(claim)
            out.sends.append(self._dead_letter(partition, offset or 0, key, raw, aside.reason))

    def _dead_letter(
        self, partition: int, offset: int, key: bytes | None, value: bytes, reason: str
    ) -> Outgoing:
        origin = (self.names.claims, partition, offset)
        return dead_letter(self.names, origin, key, value, reason)


def _encoded(key: bytes, record: dict[str, Any]) -> bytes:
    """A decision record's JSON; RecordTooLarge past MAX_RECORD_BYTES."""
    body = dumps(record)
    if len(key) + len(body) > MAX_RECORD_BYTES:
        raise RecordTooLarge(
            f"decision record of {len(body)} bytes exceeds the {MAX_RECORD_BYTES}-byte limit"
        )
    return body


def encoded_size(claim: Claim) -> int:
    """`core.size.claim_size` measured with the codec the records are written with."""
    try:
        raw = dumps(claim.envelope)
    except Exception:  # a number the codec does not take: measured as its text
        raw = dumps(fit_for_json(claim.envelope))
    return len(raw) + canonical_bytes(claim)


def _envelope_bytes(claim: Claim) -> bytes:
    """A stored claim's envelope as JSON, for its DLQ copy (its id alone if nothing encodes)."""
    try:
        return dumps(fit_for_json(claim.envelope))
    except Exception:
        return dumps({"claim_id": str(claim.claim_id), "error": "envelope does not encode"})


def conflict_change(decided: Decided) -> dict[str, Any] | None:
    """A record for the conflicts topic when a fact enters or leaves conflict."""
    record = decided.record
    event = decided.conflict_event
    if event is None:
        return None
    change: dict[str, Any] = {
        "event": event,
        "subject": record["subject"],
        "field": record["field"],
        "decision_id": record["decision_id"],
        "previous_decision_id": decided.previous_id,
        "at": record["decided_at"],
        "outcome": record["outcome"],
    }
    if event == "entered":
        change["conflict_kind"] = record["conflict_kind"]
        change["competing"] = record["alternatives"]
    return change


def _fact_key_bytes(claim: Claim) -> bytes:
    return claim.fact_key.encode()
