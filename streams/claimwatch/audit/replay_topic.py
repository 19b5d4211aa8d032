"""Replay of a claims topic over an offset range fixed when it starts; its output topic."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import IO, Any

import orjson

from claimwatch.audit.checkpoint import load_checkpoint, save_checkpoint
from claimwatch.audit.progress import progress
from claimwatch.audit.replay import (
    Replayed,
    Replayer,
    TopicRange,
    partitions_of,
    read_range,
    topic_range,
)
from claimwatch.audit.replay_parallel import jobs_for
from claimwatch.audit.replay_request import Outputs, ReplayRequest
from claimwatch.audit.replay_topic_parallel import replay_topic_shared, wants_parallel
from claimwatch.core.claim import fact_key
from claimwatch.wire import kafka
from claimwatch.wire.topics import TopicNames


def replay_topic_any(req: ReplayRequest, outputs: Outputs) -> Replayed:
    """Replay a claims topic, in `req.jobs` processes or in this one.

    Its partitions are shared out when the range is large enough and no checkpoint is kept
    (`claimwatch.audit.replay_topic_parallel`). The same decisions, in the same order.
    """
    span = None
    if req.jobs > 1 and req.checkpoint is None:
        span = asyncio.run(_range_of(req))
        jobs = jobs_for(req.jobs, len(span.end))
        if wants_parallel(span, jobs):
            return replay_topic_shared(span, req.policy, req.bootstrap, jobs, outputs.decided_body)
    return asyncio.run(replay_topic(req, outputs, span))


async def fixed_range(
    consumer: Any, bootstrap: str | None, topic: str, since_ms: int | None, until_ms: int | None
) -> TopicRange:
    """The offsets a replay of `topic` covers, fixed now (a time range, else the whole topic).

    The consumer is started; the topic's existence is checked before it is (`partitions_of`).
    """
    partitions = await kafka.topic_partitions(bootstrap, topic)
    return await topic_range(consumer, topic, partitions, since_ms, until_ms)


async def _range_of(req: ReplayRequest) -> TopicRange:
    assert req.topic is not None
    partitions = await partitions_of(req.bootstrap, req.topic)
    consumer = kafka.consumer(req.bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        return await _range(consumer, req, partitions)
    finally:
        await consumer.stop()


async def _range(consumer: Any, req: ReplayRequest, partitions: list[int]) -> TopicRange:
    """The offsets the replay covers, fixed now (`--from`/`--to`, else the whole topic)."""
    assert req.topic is not None
    return await topic_range(consumer, req.topic, partitions, req.since_ms, req.until_ms)


async def replay_topic(
    req: ReplayRequest, outputs: Outputs, span: TopicRange | None = None
) -> Replayed:
    """Replay a claims topic over a fixed offset range; resumable with a checkpoint.

    `span`: the range, when the caller has fixed it already. The consumer has no group
    (it assigns and seeks, and never commits) and reads committed records only.
    """
    assert req.topic is not None
    found = await partitions_of(req.bootstrap, req.topic) if span is None else []
    consumer = kafka.consumer(req.bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        if span is None:
            span = await _range(consumer, req, found)
        partitions = len(span.end)
        replayer = Replayer(req.policy, partitions, topic=req.topic, keep=False)
        done = load_checkpoint(req, outputs)
        replayer.on_decision = outputs.decided
        remaining = sum(span.end[p] - span.start[p] for p in span.end if p not in done)
        advance, stop = progress(remaining, req.topic)
        current: int | None = None
        try:
            async for record in read_range(consumer, span, {p: span.end[p] for p in done}):
                if current is not None and record.partition != current:
                    partition_done(req, replayer, current, done, outputs.sink)
                current = record.partition
                replayer.feed_record(record)
                advance(1)
            if current is not None:
                partition_done(req, replayer, current, done, outputs.sink)
        finally:
            stop()
        return replayer.finish()
    finally:
        await consumer.stop()


def partition_done(
    req: ReplayRequest, replayer: Replayer, partition: int, done: set[int], sink: IO[bytes]
) -> None:
    """A partition is replayed to its end: its state dropped, the checkpoint saved."""
    replayer.finish_partition(partition)
    done.add(partition)
    save_checkpoint(req, done, sink)


async def write_topic(topic: str, bodies: Iterable[bytes], bootstrap: str | None) -> None:
    """Send replayed decisions (their JSON) to a topic of the user's choice (keyed by fact)."""
    producer = kafka.producer(bootstrap)
    try:
        await producer.start()
        for body in bodies:
            record = orjson.loads(body)
            key = fact_key(record["subject"], record["field"]).encode()
            await producer.send(topic, key=key, value=body)
        await producer.flush()
    finally:
        await producer.stop()


def refuse_live_topic(name: str, prefix: str) -> None:
    """A replay never writes to the live decisions, resolutions or alerts topics."""
    names = TopicNames(prefix)
    live = {
        names.decisions,
        names.resolutions,
        names.alerts,
        names.claims,
        names.conflicts,
        names.dlq,
        names.alerts_input,
    }
    if name in live or name.endswith("-changelog"):
        raise ValueError(f"{name} is a live topic: replay writes only to a topic of your own")
