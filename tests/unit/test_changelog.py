"""ChangelogTable: writes reach the Faust table's store at once and its changelog on drain."""

from __future__ import annotations

import asyncio
from typing import Any

import faust
import pytest

from streams.changelog import ChangelogTable
from streams.runtime import CLOCK_PREFIX, table_partition
from streams.topics import partition_for

PARTITIONS = 4


class RecordingProducer:
    """Takes sends as Faust's producer does (an awaitable that yields a delivery future)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes | None, int]] = []
        self.futures: list[asyncio.Future[Any]] = []

    async def send(
        self,
        topic: str,
        key: bytes,
        value: bytes | None,
        partition: int,
        timestamp: float | None,
        headers: Any,
    ) -> asyncio.Future[Any]:
        self.sent.append((topic, key, value, partition))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.futures.append(future)
        return future


@pytest.fixture
def table() -> Any:
    """A real Faust table over the memory store (no broker needed to read and write it)."""
    app = faust.App("cw-changelog-test", broker="kafka://127.0.0.1:1", store="memory://")
    raw: Any = faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )
    return app.Table("facts", schema=raw, partitions=PARTITIONS)


def test_writes_are_read_back_before_any_drain(table: Any) -> None:
    """A value written is read back at once; nothing is sent until the agent drains."""
    facts = ChangelogTable(table, lambda key: table_partition(key, PARTITIONS))
    facts[b"invoice:1|status"] = b"one"

    assert b"one" == facts[b"invoice:1|status"]
    assert b"one" == table[b"invoice:1|status"]
    assert b"invoice:1|status" in facts
    assert [(b"invoice:1|status", b"one")] == facts.pending


async def test_drain_sends_each_keys_last_write_to_its_partition(table: Any) -> None:
    """One record per key, its last value (None: deleted), in the order of the last writes."""
    facts = ChangelogTable(table, lambda key: table_partition(key, PARTITIONS))
    fact = b"invoice:7|payment_status"
    clock = CLOCK_PREFIX + b"3"
    facts[fact] = b"v1"
    facts[clock] = b"123"
    facts[fact] = b"v2"
    del facts[fact]
    producer = RecordingProducer()

    await facts.drain(producer)

    topic = table.changelog_topic.get_topic_name()
    home = partition_for(fact, PARTITIONS)
    assert [(topic, clock, b"123", 3), (topic, fact, None, home)] == producer.sent
    assert [] == facts.pending
    assert fact not in facts


async def test_each_drain_sends_what_was_written_since_the_last(table: Any) -> None:
    """A key written again after a drain is sent again; keys not written are not."""
    facts = ChangelogTable(table, lambda key: table_partition(key, PARTITIONS))
    producer = RecordingProducer()
    facts[b"a|f"] = b"1"
    facts[b"b|f"] = b"1"
    await facts.drain(producer)
    facts[b"a|f"] = b"2"
    await facts.drain(producer)

    assert [(b"a|f", b"1"), (b"b|f", b"1"), (b"a|f", b"2")] == [
        (key, value) for _, key, value, _ in producer.sent
    ]


async def test_drain_without_writes_sends_nothing(table: Any) -> None:
    """An input record that wrote nothing costs no send."""
    facts = ChangelogTable(table, lambda key: table_partition(key, PARTITIONS))
    producer = RecordingProducer()

    await facts.drain(producer)

    assert [] == producer.sent


@pytest.mark.parametrize("partition", range(PARTITIONS))
def test_a_clock_key_belongs_to_the_partition_it_names(partition: int) -> None:
    """The clock of partition p is logged in changelog partition p, whatever its hash."""
    assert partition == table_partition(CLOCK_PREFIX + str(partition).encode(), PARTITIONS)
