"""Kafka helpers of the benchmarks: produce a workload, create, measure and delete topics."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from claimwatch.wire.kafka import env_bootstrap

from bench.children import PARTITIONS

#: A message to produce: key, value, partition.
Produced = tuple[bytes, bytes, int]


def note(text: str) -> None:
    """Progress on stderr (stdout carries only the figures)."""
    print(f"  pipeline: {text}", file=sys.stderr, flush=True)


def new_producer(**options: Any) -> Any:
    from aiokafka import AIOKafkaProducer

    return AIOKafkaProducer(bootstrap_servers=env_bootstrap(), acks="all", **options)


async def produce(topic: str, messages: Iterable[Produced]) -> int:
    """Send keyed messages to their partitions as fast as the broker takes them."""
    producer = new_producer(linger_ms=20, max_batch_size=512 * 1024)
    await producer.start()
    try:
        sent = 0
        pending: list[Any] = []
        for key, value, partition in messages:
            pending.append(await producer.send(topic, value, key=key, partition=partition))
            sent += 1
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        return sent
    finally:
        await producer.stop()


@contextlib.asynccontextmanager
async def admin_client() -> AsyncIterator[Any]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=env_bootstrap())
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


async def create_topics(names: Iterable[str], compacted: Iterable[str] = ()) -> None:
    """Create topics of PARTITIONS partitions (the compacted ones with cleanup.policy=compact)."""
    from aiokafka.admin import NewTopic

    squeezed = set(compacted)
    async with admin_client() as admin:
        await admin.create_topics(
            [
                NewTopic(
                    name,
                    PARTITIONS,
                    1,
                    topic_configs={"cleanup.policy": "compact"} if name in squeezed else {},
                )
                for name in names
            ]
        )


async def delete_topics(prefix: str, groups: Iterable[str] = ()) -> None:
    """Best effort: delete every topic named `prefix...` and the given consumer groups."""
    from aiokafka.protocol.admin import DeleteGroupsRequest

    with contextlib.suppress(Exception):
        async with admin_client() as admin:
            doomed = [t for t in await admin.list_topics() if t.startswith(prefix)]
            if doomed:
                await admin.delete_topics(doomed)
            for group in groups:
                with contextlib.suppress(Exception):
                    node = await admin.find_coordinator(group)
                    await admin._send_request_to_node(node, DeleteGroupsRequest([group]))


async def partitions_of(topics: Iterable[str]) -> dict[str, int]:
    """How many partitions each topic has."""
    async with admin_client() as admin:
        described = await admin.describe_topics(list(topics))
    return {d["topic"]: len(d["partitions"]) for d in described}


async def end_offsets(topics: Iterable[str]) -> dict[str, int]:
    """Records written so far to each topic (sum of its partitions' end offsets)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    names = list(topics)
    counts = await partitions_of(names)
    consumer = AIOKafkaConsumer(bootstrap_servers=env_bootstrap(), group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in names for p in range(counts[t])]
        ends = await consumer.end_offsets(tps)
        return {t: sum(ends[tp] for tp in tps if tp.topic == t) for t in names}
    finally:
        await consumer.stop()


async def mean_sizes(topics: Iterable[str], spots: int = 8, per_spot: int = 250) -> dict[str, int]:
    """Mean value + header bytes of each topic, sampled at evenly spaced offsets."""
    return {topic: await _mean_size(topic, spots, per_spot) for topic in topics}


async def _mean_size(topic: str, spots: int, per_spot: int) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    # One consumer per topic: once assigned, a consumer fetches metadata of its topics only.
    partitions = (await partitions_of([topic]))[topic]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=env_bootstrap(), group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = await consumer.end_offsets(tps)
        consumer.assign(tps)
        total = count = 0
        for tp in tps:
            for spot in range(spots):
                start = ends[tp] * spot // spots
                stop = min(ends[tp], start + per_spot)
                if start >= stop:
                    continue
                consumer.seek(tp, start)
                deadline = time.monotonic() + 10.0
                position = start
                while position < stop and time.monotonic() < deadline:
                    batch = await consumer.getmany(tp, timeout_ms=500, max_records=per_spot)
                    for message in batch.get(tp, ()):
                        if message.offset >= stop:
                            break
                        headers = sum(len(k) + len(v) for k, v in message.headers or ())
                        total += len(message.value or b"") + headers
                        count += 1
                        position = message.offset + 1
        return round(total / count) if count else 0
    finally:
        await consumer.stop()
