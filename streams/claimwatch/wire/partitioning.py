"""Which partition a key belongs to: Kafka's default partitioner, as the Java client has it."""

from __future__ import annotations

import functools

from aiokafka.partitioner import murmur2


@functools.lru_cache(maxsize=131_072)
def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (murmur2, as the Java client)."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def misplaced(wanted: bytes, key: bytes | None, partition: int, partitions: int) -> int | None:
    """The home partition of a record that is not keyed `wanted` or not in its home, else None."""
    home = partition_for(wanted, partitions)
    return home if key != wanted or partition != home else None
