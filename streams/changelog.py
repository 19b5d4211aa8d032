"""Writing a Faust table's changelog straight through the producer, in the agent's own send.

Faust sends a table's changelog record from a background buffer task (`send_soon`): every
write makes a future, a queue entry and a wake-up, and when more than 100 wait the agent is
held until they drain. For tables the claims agent writes several times per claim that costs
more than the step itself. `ChangelogTable` keeps the table's reads and its store, but
collects writes and lets the agent send them as plain records once per batch of input
records (the last value of each key written), with the partition named by the key (no
reliance on the "current event"), before the batch's offsets can commit (they are acked
after the send, and Faust flushes the producer before every commit). When a record is
acknowledged, the store's persisted changelog offset moves on, as Faust's own callback
does, so a rocksdb store recovers only what it lacks. In a transaction the Faust path is
kept: there the changelog record must join the partition's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from faust.types import TP


class ChangelogTable(MutableMapping[bytes, bytes]):
    """A bytes -> bytes Faust table whose changelog the caller sends (see `drain`)."""

    def __init__(self, table: Any, partition_of: Callable[[bytes], int]) -> None:
        self.table = table
        self.partition_of = partition_of
        self.topic: str = table.changelog_topic.get_topic_name()
        #: (key, value or None for a deletion) written since the last drain
        self.pending: list[tuple[bytes, bytes | None]] = []

    def __getitem__(self, key: bytes) -> bytes:
        value: bytes = self.table[key]
        return value

    def get(self, key: bytes, default: Any = None) -> Any:
        return self.table.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def items(self) -> Any:
        return self.table.items()

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.table.data[key] = value
        self.pending.append((key, value))

    def __delitem__(self, key: bytes) -> None:
        del self.table.data[key]
        self.pending.append((key, None))

    async def drain(self, producer: Any) -> None:
        """Send one changelog record per key written since the last drain: its last value.

        The changelog is a compacted log of latest values, so the earlier writes of a key in
        the same batch (the partition clock, a fact with several claims) need no record.
        """
        if not self.pending:
            return
        latest: dict[bytes, bytes | None] = {}
        for key, value in self.pending:
            latest.pop(key, None)  # a key goes where its last write was made
            latest[key] = value
        self.pending = []
        data = self.table.data
        for key, value in latest.items():
            partition = self.partition_of(key)
            future = await producer.send(self.topic, key, value, partition, None, None)
            future.add_done_callback(_persist(data, self.topic, partition))


def _persist(data: Any, topic: str, partition: int) -> Callable[[Any], None]:
    """A callback that records an acknowledged changelog offset in the table's store."""
    tp = TP(topic, partition)

    def done(future: Any) -> None:
        if not future.cancelled() and future.exception() is None:
            data.set_persisted_offset(tp, future.result().offset)

    return done
