"""Bulk changelog catch-up on the real broker: every record of the gap once, in order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from aiokafka import AIOKafkaProducer
from claimwatch.worker.catchup import ChangelogRecord, Gap, catch_up

from tests.support.kafka import TopicFactory

pytestmark = pytest.mark.kafka

RECORDS = 5_000


async def _fill(bootstrap: str, topic: str, count: int) -> None:
    """`count` records on partition 0; every 10th is a tombstone of an earlier key."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for n in range(count):
            value = None if n % 10 == 9 else f"v{n}".encode()
            await producer.send(topic, value, key=f"k{n % 700}".encode(), partition=0)
        await producer.flush()
    finally:
        await producer.stop()


class Applied:
    """What catch_up handed over: (topic, partition, offset, key, value) per record."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, int, int, bytes | None, bytes | None]] = []
        self.calls = 0

    def __call__(self, topic: str, partition: int, records: Sequence[ChangelogRecord]) -> None:
        self.calls += 1
        self.rows += [(topic, partition, r.offset, r.key, r.value) for r in records]


@pytest.mark.parametrize(
    ("start", "end", "expected_offsets"),
    [
        (None, RECORDS, range(RECORDS)),  # an empty local store: the whole changelog
        (4_000, RECORDS, range(4_000, RECORDS)),  # the tail after the applied offset
        (1_000, 1_500, range(1_000, 1_500)),  # never past the end it was given
        (RECORDS, RECORDS, range(0)),  # nothing missing: not even a connection
    ],
)
async def test_catch_up_hands_over_every_record_of_the_gap_once_in_offset_order(
    kafka_bootstrap: str,
    fresh_topic: TopicFactory,
    start: int | None,
    end: int,
    expected_offsets: range,
) -> None:
    """The records from start to end, tombstones as None values, nothing else."""
    topic = await fresh_topic("catchup")
    await _fill(kafka_bootstrap, topic, RECORDS)
    applied = Applied()
    progress = await catch_up(
        {"bootstrap_servers": kafka_bootstrap}, [Gap(topic, 0, start, end)], applied
    )
    assert list(expected_offsets) == [row[2] for row in applied.rows]
    assert {(topic, 0)} >= {(row[0], row[1]) for row in applied.rows}
    expected_values = [None if n % 10 == 9 else f"v{n}".encode() for n in expected_offsets]
    assert expected_values == [row[4] for row in applied.rows]
    assert (True, len(expected_offsets)) == (progress.complete, progress.records)


async def test_catch_up_gives_up_on_a_gap_the_log_cannot_fill(
    kafka_bootstrap: str, fresh_topic: TopicFactory
) -> None:
    """An end beyond the log (a stale end offset): what exists is applied, then it stops."""
    topic = await fresh_topic("catchup")
    await _fill(kafka_bootstrap, topic, 100)
    applied = Applied()
    progress = await catch_up(
        {"bootstrap_servers": kafka_bootstrap}, [Gap(topic, 0, 0, 200)], applied, stall_s=1.0
    )
    assert (False, 100) == (progress.complete, progress.records)
    assert list(range(100)) == [row[2] for row in applied.rows]
