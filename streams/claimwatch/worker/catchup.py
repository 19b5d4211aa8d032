"""Bulk changelog catch-up: read a table partition's missing changelog tail in batches.

Faust restores a table through its stream machinery, one event at a time, at a cost per
record far above what the store's own write takes. A worker that takes over partitions
must read the changelog tail that another worker wrote meanwhile, and that per-record
cost is most of its pause (figures: docs/performance.md). This module
reads the same records with a plain consumer, `getmany` batches of thousands, and hands
them to the store, which writes each batch with its offset in one atomic write. Faust's
recovery then starts from the offset reached and finds nothing (or only the rest) to read.

It is a shortcut, never a requirement: whatever stops it (broker error, deadline, a
transaction still open) leaves the offset where the last whole batch got it, and Faust's
own recovery reads the rest.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition

from claimwatch.wire import kafka

log = logging.getLogger(__name__)

#: the catch-up gives up (Faust reads the rest) when a partition makes no progress this long
STALL_S = 2.0
#: ... or after this long in total, so a rebalance never waits on it for long
DEADLINE_S = 60.0


class ChangelogRecord(Protocol):
    """The part of a consumed record the store needs."""

    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


#: (topic, partition, records in offset order) -> None; must apply them atomically
Apply = Callable[[str, int, Sequence[ChangelogRecord]], None]


@dataclass(frozen=True, slots=True)
class Gap:
    """A changelog partition to read from `start` (inclusive) to `end` (its end offset)."""

    topic: str
    partition: int
    start: int | None  # None: from the beginning
    end: int

    @property
    def missing(self) -> int | None:
        """Records to read (0: none, also for an empty changelog); None: unknown yet."""
        if self.end == 0:
            return 0
        return None if self.start is None else max(0, self.end - self.start)


@dataclass(slots=True)
class Progress:
    """Records applied and seconds spent, for the log line and the tests."""

    records: int = 0
    seconds: float = 0.0
    complete: bool = False


async def catch_up(
    client: Mapping[str, Any],
    gaps: Sequence[Gap],
    apply: Apply,
    deadline_s: float = DEADLINE_S,
    stall_s: float = STALL_S,
) -> Progress:
    """Read every gap's records and `apply` them, batch by batch.

    `client` holds the aiokafka client settings (bootstrap servers, security: the app's own,
    which override the CLAIMWATCH_* ones). Returns when every gap is read to its end, or
    when the deadline or a stall stops it.
    """
    progress = Progress()
    todo = {TopicPartition(g.topic, g.partition): g for g in gaps if g.missing != 0}
    if not todo:
        progress.complete = True
        return progress
    started = time.monotonic()
    consumer = kafka.consumer(
        **client,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=8 * 1024 * 1024,
        fetch_max_bytes=64 * 1024 * 1024,
    )
    await consumer.start()
    try:
        consumer.assign(list(todo))
        for tp, gap in todo.items():
            if gap.start is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, gap.start)
        await _read(consumer, todo, apply, progress, started + deadline_s, stall_s)
    finally:
        progress.seconds = time.monotonic() - started
        await consumer.stop()
    return progress


async def _read(
    consumer: AIOKafkaConsumer,
    todo: dict[TopicPartition, Gap],
    apply: Apply,
    progress: Progress,
    deadline: float,
    stall_s: float,
) -> None:
    last_progress = time.monotonic()
    while todo:
        now = time.monotonic()
        if now > deadline or now - last_progress > stall_s:
            log.info("changelog catch-up stopped with %d partitions left", len(todo))
            return
        batches = await consumer.getmany(*todo, timeout_ms=200, max_records=20_000)
        for tp, records in batches.items():
            gap = todo[tp]
            wanted = [r for r in records if r.offset < gap.end]
            if wanted:
                apply(tp.topic, tp.partition, wanted)
                progress.records += len(wanted)
                last_progress = time.monotonic()
        for tp in list(todo):
            if await consumer.position(tp) >= todo[tp].end:
                del todo[tp]
                last_progress = time.monotonic()
        await asyncio.sleep(0)  # let heartbeats and the web server run between batches
    progress.complete = True
