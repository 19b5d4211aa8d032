"""Replay: re-decide a claim stream (JSON-lines file or claims topic) on the partition clock.

The same Runtime as the live worker runs here over an in-memory table, so windows, expiry
and dedupe behave as they did live; nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from streams.codec import DecodeError, decode_claim
from streams.core.policy import CompiledPolicy
from streams.offline import LineError
from streams.runtime import Handled, MemoryFacts, Runtime
from streams.topics import TopicNames, partition_for


@dataclass(slots=True)
class Replayed:
    """Decision records in the order they were made, and the input lines refused."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    records: int = 0


class Replayer:
    """Feeds records to a Runtime over a dict table and collects the decisions."""

    def __init__(
        self, policy: CompiledPolicy, partitions: int, prefix: str = "claimwatch."
    ) -> None:
        self.runtime = Runtime(policy, TopicNames(prefix), partitions, {}, MemoryFacts())
        self.partitions = partitions
        self.result = Replayed()
        #: called with each decision record and its JSON (already serialized by the runtime)
        self.on_decision: Callable[[dict[str, Any], bytes], None] | None = None

    def _collect(self, handled: Handled) -> None:
        for decided, body in zip(handled.decided, handled.bodies, strict=True):
            self.result.decisions.append(decided.record)
            if self.on_decision is not None:
                self.on_decision(decided.record, body)

    def feed_line(self, raw: bytes, source: str, number: int) -> None:
        """One JSON line of a claims file; its claims alone drive the clock (no ticks).

        A file has no tick records and no record timestamps, so each claim's own
        `observed_at` stands for its arrival (see Runtime.handle_claim). Without that, a quiet
        gap longer than `clock_skew` would leave every later claim "ahead of the clock".
        """
        self.result.records += 1
        if not raw.strip():
            return
        try:
            claim = decode_claim(raw)
        except DecodeError as exc:
            self.result.errors.append(LineError(source, number, "claim", str(exc)))
            return
        home = partition_for(claim.fact_key.encode(), self.partitions)
        self._collect(
            self.runtime.handle_claim(home, number, claim, raw, arrival_us=claim.observed_us)
        )

    def feed_record(
        self,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes,
        timestamp_us: int | None = None,
    ) -> None:
        """One record of the claims topic (ticks and misrouted copies as the worker saw them)."""
        self.result.records += 1
        self._collect(self.runtime.handle(partition, offset, key, value, timestamp_us))

    def finish_partition(self, partition: int) -> None:
        """A topic partition has been read to its end offset: close its open windows."""
        self._collect(self.runtime.flush_partition(partition))

    def finish(self) -> Replayed:
        """Close the windows still open at the end of the input."""
        for handled in self.runtime.flush():
            self._collect(handled)
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


async def topic_range(
    consumer: Any, topic: str, since_ms: int | None, until_ms: int | None
) -> TopicRange:
    """Offsets for a time range (offsets-for-times), or the whole topic."""
    from aiokafka import TopicPartition

    partitions = sorted(consumer.partitions_for_topic(topic) or ())
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
) -> AsyncIterator[tuple[int, int, bytes | None, bytes, int]]:
    """Yield (partition, offset, key, value, timestamp in µs) per partition, in offset order."""
    from aiokafka import TopicPartition

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
                yield partition, message.offset, message.key, message.value or b"", stamp
            # transaction markers (and aborted records) take offsets but are never returned:
            # the consumer's position moves past them, so follow it or the range never ends
            position = max(position, min(stop, await consumer.position(tp)))


def facts_last(decisions: Iterable[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The last decision of every fact (decision ids repeated by at-least-once are harmless)."""
    last: dict[str, dict[str, Any]] = {}
    for record in decisions:
        last[f"{record['subject']}|{record['field']}"] = record
    for key in sorted(last):
        yield key, last[key]
