"""Table writes straight to the store, their changelog records sent by the agent itself.

Faust writes a table's changelog through a per-record buffer (`Table.__setitem__` →
`send_soon` → `ProducerBuffer` → a task that publishes), whose cost per record `make
bench` shows (`faust_floor_tables` against `faust_floor_direct_tables`; figures:
docs/performance.md). `DirectTable` keeps what makes the buffer safe and drops the rest:

- the store is written at once, as Faust does (reads see the new value);
- the change is queued, and `send_changes` hands it to the producer before the agent
  is done with the input record, so Faust's commit, which flushes the producer first,
  never commits an input offset whose state is not in the changelog;
- when the broker acknowledges a change, its offset is recorded in the store
  (`set_persisted_offset`), as Faust's own delivery callback does, so a restart with its
  local state reads only the changelog records after it. One acknowledgement answers many
  records: the highest offset of each partition is written once, at the next
  `send_changes` (one store write per acknowledged burst, not one per record; a crash
  before it costs a restart a few more changelog records to read, never an entry);
- every change of one table goes by one path, in the order made: a write queued here is
  never overtaken by an older one still in Faust's buffer. Under exactly-once
  (`in_transaction`) the writes go through Faust's table, whose records join the
  partition's transaction;
- a change the producer refuses (a value over its 1 MB request limit) is reported through
  the app's producer guard (`claimwatch.worker.producer_guard`: logged, counted, noted on the
  DLQ) and the next change is sent: it never leaves `send_changes`, so it never fails
  the record being handled nor loses the changes queued after it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any, Protocol

from faust import current_event

from claimwatch.worker.producer_guard import guard_of

log = logging.getLogger(__name__)

#: A record's delivery future (resolves to its RecordMetadata).
Delivery = Any


class Producer(Protocol):
    """What `send_changes` uses of Faust's producer (`app.producer`)."""

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
    ) -> Delivery: ...


class DirectTable(MutableMapping[bytes, bytes]):
    """A Faust bytes table written through its store; its changelog sent by `send_changes`."""

    def __init__(
        self, table: Any, *, direct: bool, partition_of: Callable[[], int] | None = None
    ) -> None:
        self.table = table
        #: False: every write goes through Faust's table (exactly-once transactions)
        self.direct = direct
        #: the partition a write belongs to (default: the record being processed's)
        self._partition_of = partition_of or current_partition
        self._changes: list[tuple[bytes, bytes | None, int]] = []
        #: the highest acknowledged changelog offset of each partition not yet recorded
        self._acked: dict[Any, int] = {}
        #: the changelog topic's name
        self.topic = str(table.changelog_topic.get_topic_name())

    def __getitem__(self, key: bytes) -> bytes:
        value: bytes = self.table.data[key]
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.table.data

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.table.data)

    def __len__(self) -> int:
        return len(self.table.data)

    def __setitem__(self, key: bytes, value: bytes) -> None:
        if not self.direct:
            self.table[key] = value
            return
        partition = self._partition_of()
        self.table.data[key] = value
        self._changes.append((key, value, partition))

    def __delitem__(self, key: bytes) -> None:
        if not self.direct:
            del self.table[key]
            return
        partition = self._partition_of()
        del self.table.data[key]
        self._changes.append((key, None, partition))

    def pending(self) -> int:
        """How many changes wait for `send_changes`."""
        return len(self._changes)

    async def send_changes(
        self, producer: Producer, admit: Callable[[Delivery], Awaitable[None]]
    ) -> None:
        """Hand the queued changes to the producer, in order; persist offsets on delivery.

        `admit` tracks each delivery future (the agent's bound on records in flight).
        The offsets acknowledged since the last call are recorded first.
        """
        self.persist_acked()
        if not self._changes:
            return
        changes, self._changes = self._changes, []
        for key, value, partition in changes:
            try:
                delivery = await producer.send(self.topic, key, value, partition, None, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self._refused(key, value, partition, exc)
                continue
            delivery.add_done_callback(self._persist)
            await admit(delivery)

    async def _refused(
        self, key: bytes, value: bytes | None, partition: int, exc: Exception
    ) -> None:
        """A change the producer refused: reported, and the next one goes on."""
        guard = guard_of(getattr(self.table, "app", None))
        if guard is not None:
            await guard.refused(self.topic, key, value, partition, exc)
        else:
            log.error("the changelog record of %r was refused: %r; it is dropped", key[:80], exc)

    def persist_acked(self) -> None:
        """Record in the store the highest acknowledged offset of each partition."""
        if not self._acked:
            return
        acked, self._acked = self._acked, {}
        for tp, offset in acked.items():
            self.table.data.set_persisted_offset(tp, offset)

    def _persist(self, delivery: Delivery) -> None:
        if delivery.cancelled() or delivery.exception() is not None:
            return  # the agent's in-flight bound counts and logs the failure
        sent = delivery.result()
        tp = sent.topic_partition
        if sent.offset > self._acked.get(tp, -1):
            self._acked[tp] = sent.offset


def current_partition() -> int:
    """The partition of the record being processed: a table entry lives on it, as in Faust."""
    event = current_event()
    if event is None:
        raise RuntimeError("Cannot modify table outside of agent/stream.")
    partition: int = event.message.partition
    return partition
