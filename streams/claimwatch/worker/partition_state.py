"""What an edge keeps in memory per partition: built from its table, dropped at rebalances."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from claimwatch.wire.codec import loads

T = TypeVar("T")


def forget_partitions(cache: dict[int, Any], partitions: set[int] | None) -> None:
    """Drop what an edge keeps per partition: of `partitions`, or of all when None.

    Edges call it at a rebalance or after a recovery; what they drop is rebuilt from the
    table on first use.
    """
    if partitions is None:
        cache.clear()
    for p in partitions or ():
        cache.pop(p, None)


class PerPartition(Generic[T]):
    """What an edge keeps in memory per partition, built on first use and dropped at will.

    `build` restores a partition's value from the edge's table; `forget` drops values at a
    rebalance or after a recovery.
    """

    __slots__ = ("_build", "_kept")

    def __init__(self, build: Callable[[int], T]) -> None:
        self._build = build
        self._kept: dict[int, T] = {}

    def __getitem__(self, partition: int) -> T:
        kept = self._kept.get(partition)
        if kept is None:
            kept = self._kept[partition] = self._build(partition)
        return kept

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop what is kept of `partitions` (of all when None)."""
        forget_partitions(self._kept, partitions)


def stored_of(
    table: Mapping[bytes, bytes], prefix: bytes, partition: int
) -> Iterator[dict[str, Any]]:
    """The JSON records under `prefix` that name `partition` (`{"partition": p, ...}`)."""
    for key, raw in list(table.items()):
        if key.startswith(prefix):
            stored = loads(raw)
            if stored["partition"] == partition:
                yield stored


def forget_on_rebalance(app: Any, topic: str, forget: Callable[[set[int]], None]) -> None:
    """Call `forget` with the partitions of `topic` revoked or assigned at each rebalance."""

    async def moved(_app: Any, partitions: Any, **_: Any) -> None:
        forget({tp.partition for tp in partitions if tp.topic == topic})

    app.on_partitions_revoked.connect(moved)
    app.on_partitions_assigned.connect(moved)
