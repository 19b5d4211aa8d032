"""Readiness check for a Kafka broker: round trip, an exactly-once transaction, offset commits."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import logging.handlers
import sys
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class NotReadyError(Exception):
    """The broker answered, but not the way a Faust exactly-once worker needs."""


def _expect(expected: object, actual: object, what: str) -> None:
    if expected != actual:
        raise NotReadyError(f"{what}: expected {expected!r}, got {actual!r}")


async def _expect_committed(
    consumer: AIOKafkaConsumer, tp: TopicPartition, expected: int, what: str
) -> None:
    # EndTxn returns before the coordinator writes the commit markers, and aiokafka's
    # OffsetFetch (<= v3, no require_stable) omits still-pending transactional offsets.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while (actual := await consumer.committed(tp)) != expected and loop.time() < deadline:
        await asyncio.sleep(0.05)
    _expect(expected, actual, what)


async def _check(bootstrap: str) -> None:
    run = uuid.uuid4().hex[:12]
    topic = f"claimwatch-ready-{run}"
    group = f"claimwatch-ready-{run}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        try:
            await _round_trip_and_transaction(bootstrap, topic, group, run)
        finally:
            with contextlib.suppress(Exception):
                await admin.delete_topics([topic])
    finally:
        await admin.close()


async def _round_trip_and_transaction(bootstrap: str, topic: str, group: str, run: str) -> None:
    tp = TopicPartition(topic, 0)
    # 1. plain produce (acks=all, idempotent) and consume
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        plain = await producer.send_and_wait(topic, b"plain", key=b"k")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        msg = await consumer.getone()
        _expect((plain.offset, b"plain"), (msg.offset, msg.value), "plain record")

        # 2. a transaction that also commits the group's offsets (what Faust EOS does)
        txn = AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"claimwatch-ready-{run}"
        )
        await txn.start()
        try:
            async with txn.transaction():
                await txn.send(topic, b"txn", key=b"k")
                await txn.send_offsets_to_transaction({tp: msg.offset + 1}, group)
        finally:
            await txn.stop()
        await _expect_committed(consumer, tp, msg.offset + 1, "offset sent to the transaction")

        # 3. read_committed consume of the transactional record, then a plain offset commit
        msg = await consumer.getone()
        _expect(b"txn", msg.value, "transactional record")
        position = await consumer.position(tp)
        await consumer.commit()
        await _expect_committed(consumer, tp, position, "committed offset")
    finally:
        await consumer.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", default=DEFAULT_BOOTSTRAP, help="host:port")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole check")
    args = parser.parse_args(argv)
    # aiokafka logs transient errors (e.g. the coordinator of a fresh broker still loading);
    # keep them, and show them only if the check fails
    logs = logging.handlers.BufferingHandler(capacity=200)
    logs.setFormatter(logging.Formatter("  %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[logs])
    try:
        asyncio.run(asyncio.wait_for(_check(args.bootstrap), args.timeout))
    except Exception as exc:
        if isinstance(exc, NotReadyError):
            reason = str(exc)
        elif isinstance(exc, TimeoutError):
            reason = f"no success within {args.timeout:.0f} s"
        else:
            reason = str(exc)
            if type(exc).__name__ not in reason:
                reason = f"{type(exc).__name__}: {reason}"
        print(f"kafka_ready: {args.bootstrap} not ready: {reason}", file=sys.stderr)
        for record in logs.buffer[-20:]:
            print(logs.format(record), file=sys.stderr)
        return 1
    print(f"kafka_ready: {args.bootstrap} ok (round trip, transaction with offsets, commit)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
