"""Replay: re-decide a claim stream (JSON-lines file or claims topic) on the partition clock.

The same Runtime as the live worker runs here over an in-memory table, so windows, expiry
and dedupe behave as they did live; nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from aiokafka import TopicPartition

from claimwatch.audit.resolve_file import LineError
from claimwatch.core.claim import Claim, fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.quarantine import internal_error
from claimwatch.core.signing import BAD_SIGNATURE
from claimwatch.wire import kafka
from claimwatch.wire.codec import DecodeError, decode_claim
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.claims.edge import ClaimsHandled, Runtime
from claimwatch.worker.claims.facts import MemoryFacts
from claimwatch.worker.input_record import Record


@dataclass(slots=True)
class Replayed:
    """Decision records in the order they were made, and the input lines refused."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    records: int = 0


#: Decisions handed on at a time when the end of the input closes every open window.
FLUSH_PART: Final = 1_000
#: What the claim of a file line became when it was decided, or ignored as a redelivery.
_TAKEN: Final = frozenset({"accepted", "kept", "rejected", "duplicate"})
#: The key a refused line is reported under, by what the runtime made of it (else "claim").
_REFUSED_AS: Final = {BAD_SIGNATURE: "signature", "conflicting_duplicate": "claim_id"}


class Replayer:
    """Feeds records to a Runtime over a dict table and collects the decisions.

    Whatever goes wrong with one input record is reported as that record's error (file
    line, or topic partition and offset) and the records after it are replayed as usual.
    """

    def __init__(
        self,
        policy: CompiledPolicy,
        partitions: int,
        prefix: str = "claimwatch.",
        topic: str | None = None,
        keep: bool = True,
    ) -> None:
        names = TopicNames(prefix)
        # claims are not checked on arrival: each decision checks its claims, and a claim
        # that breaks its contract is decided `rejected` all the same
        self.runtime = Runtime(
            policy, names, partitions, {}, MemoryFacts(), alerts=False, judge_arrivals=False
        )
        self.partitions = partitions
        #: how a topic record's errors name their origin
        self.topic = topic if topic is not None else names.claims
        self.result = Replayed()
        #: called with each decision record and its JSON (already serialized by the runtime)
        self.on_decision: Callable[[dict[str, Any], bytes], None] | None = None
        #: whether `result.decisions` holds every decision (False: they only go to
        #: `on_decision`, and a long replay holds none of them)
        self.keep = keep

    def _collect(self, handled: ClaimsHandled, source: str = "", number: int = 0) -> None:
        """Hand on the decisions; a fact set aside is an error (as its claims are live DLQ)."""
        for aside in handled.quarantined:
            where = source or self.topic
            reason = f"{aside.reason} (fact {aside.key[:200]}, {len(aside.claims)} claim(s))"
            self.result.errors.append(LineError(where, number, "fact", reason))
        for decided, body in zip(handled.decided, handled.bodies, strict=True):
            if self.keep:
                self.result.decisions.append(decided.record)
            if self.on_decision is not None:
                self.on_decision(decided.record, body)

    def feed_line(
        self, raw: bytes, source: str, number: int, decoded: tuple[Claim, int] | None = None
    ) -> None:
        """One JSON line of a claims file; its claims alone drive the clock (no ticks).

        A file has no tick records and no record timestamps, so each claim's own
        `observed_at` stands for its arrival (see Runtime.handle_claim). Without that, a quiet
        gap longer than `clock_skew` would leave every later claim "ahead of the clock".
        `decoded`: the line's claim and home partition, when the caller has them already.
        """
        self.result.records += 1
        try:
            error = self._line(raw, source, number, decoded)
        except Exception as exc:  # one guard per line: a bug costs this line, not the file
            error = LineError(source, number, "claim", internal_error(exc))
        if error is not None:
            self.result.errors.append(error)

    def _line(
        self, raw: bytes, source: str, number: int, decoded: tuple[Claim, int] | None
    ) -> LineError | None:
        """Replay one line; its error when its claim was neither decided nor a redelivery."""
        if decoded is not None:
            claim, home = decoded
        elif not raw.strip():
            return None
        else:
            try:
                claim = decode_claim(raw)
            except DecodeError as exc:
                return LineError(source, number, "claim", str(exc))
            home = partition_for(claim.fact_key.encode(), self.partitions)
        handled = self.runtime.handle_claim(home, number, claim, raw, arrival_us=claim.observed_us)
        self._collect(handled, source, number)
        if _TAKEN.intersection(handled.events):
            return None
        if any(c is claim for aside in handled.quarantined for c in aside.claims):
            return None  # reported with its fact
        dlq = self.runtime.names.dlq
        reasons = [
            dict(s.headers).get("claimwatch.reason") for s in handled.sends if s.topic == dlq
        ]
        reason = next((r.decode() for r in reasons if r), "not decided")
        key = next((_REFUSED_AS[e] for e in handled.events if e in _REFUSED_AS), "claim")
        return LineError(source, number, key, reason)

    def feed_record(self, record: Record) -> None:
        """One record of the claims topic (ticks and misrouted copies as the worker saw them).

        Records the worker dead-lettered are dead-lettered here too (not reported: the live
        DLQ holds them); a record whose handling fails is reported by partition and offset.
        """
        self.result.records += 1
        try:
            self._collect(
                self.runtime.handle(
                    record.partition, record.offset, record.key, record.value, record.timestamp_us
                ),
                f"{self.topic}[{record.partition}]",
                record.offset,
            )
        except Exception as exc:  # one guard per record, as for file lines
            where = f"{self.topic}[{record.partition}]"
            self.result.errors.append(
                LineError(where, record.offset, "record", internal_error(exc))
            )

    def finish_partition(self, partition: int) -> None:
        """A topic partition has been read to its end offset: close its open windows.

        Its state is dropped then: nothing more of the range is read on that partition.
        """
        for part in self.runtime.flush_partition_in(partition, FLUSH_PART):
            self._collect(part)
        self.runtime.forget({partition})

    def finish(self) -> Replayed:
        """Close the windows still open at the end of the input."""
        for part in self.runtime.flush_in(FLUSH_PART):
            self._collect(part)
        return self.result


def replay_lines(
    policy: CompiledPolicy, lines: Iterable[bytes], source: str, partitions: int = 4
) -> Replayed:
    """Replay a JSON-lines claims file."""
    replayer = Replayer(policy, partitions)
    for number, raw in enumerate(lines, start=1):
        replayer.feed_line(raw, source, number)
    return replayer.finish()


@dataclass(frozen=True, slots=True)
class TopicRange:
    """Per-partition [start, end) offsets of a topic replay, fixed when it starts."""

    topic: str
    start: dict[int, int]
    end: dict[int, int]

    def total(self) -> int:
        return sum(max(0, self.end[p] - self.start[p]) for p in self.end)


async def partitions_of(bootstrap: str | None, topic: str) -> list[int]:
    """The partitions of `topic`; RuntimeError naming the topic when it does not exist.

    Asked before a consumer starts: a consumer stopped while that error propagates raises
    CancelledError from aiokafka's coordinator task instead, and the reason is lost.
    """
    partitions = await kafka.topic_partitions(bootstrap, topic)
    if not partitions:
        raise RuntimeError(f"topic {topic} does not exist or has no partitions")
    return partitions


async def topic_range(
    consumer: Any,
    topic: str,
    partitions: Iterable[int],
    since_ms: int | None,
    until_ms: int | None,
) -> TopicRange:
    """Offsets of `partitions` for a time range (offsets-for-times), or the whole topic."""
    partitions = sorted(partitions)
    if not partitions:
        raise RuntimeError(f"topic {topic} does not exist or has no partitions")
    tps = [TopicPartition(topic, p) for p in partitions]
    first = await consumer.beginning_offsets(tps)
    last = await consumer.end_offsets(tps)
    start = {tp.partition: first[tp] for tp in tps}
    end = {tp.partition: last[tp] for tp in tps}
    for bound, target in ((since_ms, start), (until_ms, end)):
        if bound is None:
            continue
        found = await consumer.offsets_for_times({tp: bound for tp in tps})
        for tp in tps:
            hit = found.get(tp)
            target[tp.partition] = hit.offset if hit is not None else last[tp]
    return TopicRange(topic, start, end)


async def read_range(
    consumer: Any, span: TopicRange, resume: dict[int, int] | None = None
) -> AsyncIterator[Record]:
    """Yield the records of the range, partition by partition, in offset order.

    A tombstone keeps its null value (the runtime dead-letters it as `tombstone`).
    """
    for partition in sorted(span.end):
        position = (resume or {}).get(partition, span.start[partition])
        stop = span.end[partition]
        if position >= stop:
            continue
        tp = TopicPartition(span.topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, position)
        while position < stop:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=2000)
            for message in batch.get(tp, ()):
                if message.offset >= stop:
                    position = stop
                    break
                position = message.offset + 1
                stamp = int(message.timestamp) * 1000
                offset, key, value = message.offset, message.key, message.value
                yield Record(span.topic, partition, offset, key, value, stamp)
            # transaction markers (and aborted records) take offsets but are never returned:
            # the consumer's position moves past them, so follow it or the range never ends
            position = max(position, min(stop, await consumer.position(tp)))


def facts_last(decisions: Iterable[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The last decision of every fact (decision ids repeated by at-least-once are harmless)."""
    last: dict[str, dict[str, Any]] = {}
    for record in decisions:
        last[fact_key(record["subject"], record["field"])] = record
    for key in sorted(last):
        yield key, last[key]
