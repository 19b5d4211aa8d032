"""Direct table writes: the store at once, the changelog in order, offsets on delivery."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import pytest
from claimwatch.worker.changelog import DirectTable


class _TP(NamedTuple):
    topic: str
    partition: int


class _Sent(NamedTuple):
    topic_partition: _TP
    offset: int


class _Store(dict[bytes, bytes]):
    """A store that remembers the changelog offsets it was told it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.persisted: dict[_TP, int] = {}

    def set_persisted_offset(self, tp: _TP, offset: int) -> None:
        self.persisted[tp] = offset


class _Topic:
    def get_topic_name(self) -> str:
        return "p.facts-changelog"


class _Table:
    """What DirectTable uses of a Faust table; writes through it are Faust's path."""

    def __init__(self) -> None:
        self.data = _Store()
        self.changelog_topic = _Topic()
        self.through_faust: list[tuple[bytes, bytes | None]] = []

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.through_faust.append((key, value))
        self.data[key] = value

    def __delitem__(self, key: bytes) -> None:
        self.through_faust.append((key, None))
        del self.data[key]


class _Producer:
    """Hands out one delivery future per record, resolved by the test."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes | None, int | None]] = []
        self.deliveries: list[asyncio.Future[Any]] = []

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
    ) -> Any:
        self.sent.append((topic, key, value, partition))
        delivery: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.deliveries.append(delivery)
        return delivery


async def _admit(delivery: Any) -> None:
    """No bound on records in flight here."""


def _direct(partition: int = 2) -> tuple[_Table, DirectTable]:
    table = _Table()
    return table, DirectTable(table, direct=True, partition_of=lambda: partition)


async def test_a_write_reaches_the_store_at_once_and_the_changelog_on_send() -> None:
    """Reads see a write before it is sent; send_changes hands it over with its partition."""
    table, direct = _direct()
    producer = _Producer()
    direct[b"k"] = b"v1"
    assert (b"v1", 1, []) == (direct[b"k"], direct.pending(), producer.sent)
    await direct.send_changes(producer, _admit)
    assert ([("p.facts-changelog", b"k", b"v1", 2)], 0) == (producer.sent, direct.pending())
    assert [] == table.through_faust


async def test_changes_are_sent_in_the_order_made_deletes_as_tombstones() -> None:
    """Two writes and a delete of one key reach the changelog in order; the last is None."""
    _, direct = _direct()
    producer = _Producer()
    direct[b"k"] = b"v1"
    direct[b"k"] = b"v2"
    del direct[b"k"]
    await direct.send_changes(producer, _admit)
    assert [b"v1", b"v2", None] == [value for _, _, value, _ in producer.sent]
    assert b"k" not in direct


async def test_the_persisted_offset_follows_deliveries_only() -> None:
    """An offset is recorded when the broker acknowledges, never for a failed delivery."""
    table, direct = _direct(partition=1)
    producer = _Producer()
    direct[b"a"] = b"1"
    direct[b"b"] = b"2"
    await direct.send_changes(producer, _admit)
    assert {} == table.data.persisted
    tp = _TP("p.facts-changelog", 1)
    producer.deliveries[0].set_result(_Sent(tp, 40))
    producer.deliveries[1].set_exception(RuntimeError("broker refused"))
    await asyncio.sleep(0)
    direct.persist_acked()
    assert {tp: 40} == table.data.persisted


async def test_an_acknowledged_burst_is_recorded_once_at_its_highest_offset() -> None:
    """Many deliveries acknowledged together: one store write per partition, the highest."""
    table, direct = _direct(partition=1)
    producer = _Producer()
    writes: list[tuple[_TP, int]] = []
    table.data.set_persisted_offset = lambda tp, offset: writes.append((tp, offset))  # type: ignore[method-assign]
    for n in range(5):
        direct[b"k%d" % n] = b"v"
    await direct.send_changes(producer, _admit)
    tp = _TP("p.facts-changelog", 1)
    for offset, delivery in zip([7, 9, 8, 10, 11], producer.deliveries, strict=True):
        delivery.set_result(_Sent(tp, offset))
    await asyncio.sleep(0)
    assert [] == writes  # recorded at the next send_changes, not in the callbacks
    await direct.send_changes(producer, _admit)
    assert [(tp, 11)] == writes


async def test_under_transactions_every_write_goes_through_faust() -> None:
    """direct=False: the Faust table is written (its records join the transaction)."""
    table = _Table()
    through = DirectTable(table, direct=False, partition_of=lambda: 0)
    through[b"k"] = b"v"
    del through[b"k"]
    assert ([(b"k", b"v"), (b"k", None)], 0) == (table.through_faust, through.pending())


@pytest.mark.parametrize("change", ["set", "delete"])
def test_a_write_outside_a_record_is_refused(change: str) -> None:
    """With no record being processed there is no partition to write to: refused, as Faust."""
    table = _Table()
    table.data[b"k"] = b"v"
    direct = DirectTable(table, direct=True)
    with pytest.raises(RuntimeError, match="outside of agent"):
        if change == "set":
            direct[b"k"] = b"w"
        else:
            del direct[b"k"]
    assert (b"v", 0) == (table.data[b"k"], direct.pending())
