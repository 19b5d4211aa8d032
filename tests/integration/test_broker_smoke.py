"""Smoke tests against a real Apache Kafka broker: round trip, transactions, offsets."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

TopicFactory = Callable[..., Awaitable[str]]
TIMEOUT = 30.0
T = TypeVar("T")


async def _consume(consumer: AIOKafkaConsumer, count: int) -> list[ConsumerRecord[bytes, bytes]]:
    """Read exactly `count` records (or fail after TIMEOUT seconds)."""
    records: list[ConsumerRecord[bytes, bytes]] = []
    async with asyncio.timeout(TIMEOUT):
        while len(records) < count:
            batches = await consumer.getmany(timeout_ms=500, max_records=count - len(records))
            for batch in batches.values():
                records.extend(batch)
    return records


async def _eventually(probe: Callable[[], Awaitable[T]], expected: T) -> T:
    """Poll `probe` until it returns `expected` (or TIMEOUT passes); return its last answer."""
    # EndTxn returns before the transaction markers are written, so a committed
    # transaction's offsets become visible to OffsetFetch a few milliseconds later.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while (actual := await probe()) != expected and loop.time() < deadline:
        await asyncio.sleep(0.05)
    return actual


@pytest.mark.kafka
async def test_produce_consume_round_trip(kafka_bootstrap: str, fresh_topic: TopicFactory) -> None:
    """Records produced to a fresh topic come back in order with their keys."""
    topic = await fresh_topic("smoke-roundtrip")
    sent = [(b"claim-1", b"first"), (b"claim-2", b"second"), (b"claim-1", b"third")]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in sent:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        records = await _consume(consumer, len(sent))
    finally:
        await consumer.stop()
    expected_offsets = [0, 1, 2]
    assert sent == [(r.key, r.value) for r in records]
    assert expected_offsets == [r.offset for r in records]


@pytest.mark.kafka
async def test_read_committed_sees_committed_not_aborted(
    kafka_bootstrap: str, fresh_topic: TopicFactory
) -> None:
    """A read_committed consumer sees a committed transaction's records, not an aborted one's."""
    topic = await fresh_topic("smoke-txn")
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, transactional_id=f"smoke-txn-{uuid.uuid4().hex}"
    )
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send(topic, b"committed-1")
            await producer.send(topic, b"committed-2")
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted-1")
        await producer.abort_transaction()
        async with producer.transaction():  # marks the end of what the consumers must read
            await producer.send(topic, b"committed-3")
    finally:
        await producer.stop()

    seen: dict[str, list[bytes]] = {}
    for isolation, count in (("read_committed", 3), ("read_uncommitted", 4)):
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka_bootstrap,
            isolation_level=isolation,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            seen[isolation] = [r.value for r in await _consume(consumer, count)]
        finally:
            await consumer.stop()

    expected_committed = [b"committed-1", b"committed-2", b"committed-3"]
    assert expected_committed == seen["read_committed"]
    # the aborted record is really in the log: only the isolation level hides it
    expected_all = [b"committed-1", b"committed-2", b"aborted-1", b"committed-3"]
    assert expected_all == seen["read_uncommitted"]


@pytest.mark.kafka
async def test_send_offsets_to_transaction_commits_group_offset(
    kafka_bootstrap: str, fresh_topic: TopicFactory
) -> None:
    """Offsets sent to a committed transaction become the group's committed offsets (Faust EOS)."""
    source = await fresh_topic("smoke-eos-in")
    sink = await fresh_topic("smoke-eos-out")
    group = f"smoke-eos-{uuid.uuid4().hex[:12]}"
    tp = TopicPartition(source, 0)

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        for n in range(3):
            await producer.send_and_wait(source, f"in-{n}".encode())
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        source,
        bootstrap_servers=kafka_bootstrap,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    txn = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, transactional_id=f"smoke-eos-{uuid.uuid4().hex}"
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await consumer.start()
    await txn.start()
    await admin.start()
    try:
        records = await _consume(consumer, 3)  # a subscribed, joined group member, like Faust
        expected_values = [b"in-0", b"in-1", b"in-2"]
        assert expected_values == [r.value for r in records]
        assert None is await consumer.committed(tp)

        expected_offset = 3  # the next record to read
        async with txn.transaction():
            for record in records:
                await txn.send(sink, record.value.upper())
            await txn.send_offsets_to_transaction({tp: records[-1].offset + 1}, group)

        assert expected_offset == await _eventually(lambda: consumer.committed(tp), expected_offset)

        async def admin_offset() -> int | None:
            offsets = await admin.list_consumer_group_offsets(group)
            return offsets[tp].offset if tp in offsets else None

        assert expected_offset == await _eventually(admin_offset, expected_offset)
    finally:
        await admin.close()
        await txn.stop()
        await consumer.stop()
