"""The worker's default table store: Faust's rocksdb store that heals local state Kafka disowns.

A local partition store remembers the changelog offset it has applied. When that offset is
beyond the changelog's end (the topics were deleted and recreated, or the directory was
copied from another deployment), Faust refuses to start (`ConsistencyError`). Kafka Streams
treats the same case as a corrupted task: it wipes the local store and restores it from the
changelog. So does this store, for that partition only, with one warning.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from faust.stores import STORES
from faust.stores.rocksdb import Store as RocksDBStore

log = logging.getLogger(__name__)

#: The store URL scheme the worker uses for `--store rocksdb://`.
SCHEME: Final = "claimwatch-rocksdb"


def store_url(store: str) -> str:
    """The Faust store URL for a `--store` value (rocksdb:// is this module's store)."""
    if store.startswith("rocksdb://"):
        return SCHEME + store[len("rocksdb") :]
    return store


def register() -> None:
    """Make the scheme known to Faust's store registry (idempotent)."""
    STORES.aliases[SCHEME] = f"{__name__}:HealingRocksDBStore"


class HealingRocksDBStore(RocksDBStore):
    """Rocksdb store whose partitions ahead of their changelog are wiped and restored."""

    #: end offsets of every changelog partition assigned in one rebalance, by generation:
    #: asked once for all tables (each request crosses into Faust's consumer thread, which
    #: answers slowly while a rebalance is under way)
    _ends: ClassVar[dict[int, Mapping[Any, int]]] = {}

    async def on_rebalance(
        self, assigned: Any, revoked: Any, newly_assigned: Any, generation_id: int = 0
    ) -> None:
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)
        mine = sorted(tp for tp in newly_assigned if tp.topic in self.table.changelog_topic.topics)
        if not mine:
            return
        ends = await self._changelog_ends(newly_assigned, generation_id)
        for tp in mine:
            offset = super().persisted_offset(tp)
            end = ends.get(tp)
            if offset is not None and end is not None and offset > end - 1:
                log.warning(
                    "local store %s (partition %d) has applied changelog offset %d but %s "
                    "ends at offset %d: the topics were recreated or the directory belongs "
                    "to another deployment; wiping this partition's local state and "
                    "restoring it from the changelog",
                    self.table.name,
                    tp.partition,
                    offset,
                    tp.topic,
                    end - 1,
                )
                self.wipe(tp.partition)

    async def _changelog_ends(self, newly_assigned: Any, generation_id: int) -> Mapping[Any, int]:
        """End offsets of every table's newly assigned changelog partitions (one request)."""
        known = self._ends.get(generation_id)
        if known is None:
            changelogs = {
                t for table in self.app.tables.values() for t in table.changelog_topic.topics
            }
            wanted = sorted(tp for tp in newly_assigned if tp.topic in changelogs)
            known = dict(await self.app.consumer.highwaters(*wanted)) if wanted else {}
            self._ends.clear()  # only the current generation is ever asked for
            self._ends[generation_id] = known
        return known

    def wipe(self, partition: int) -> None:
        """Close and delete one partition's local database; it reopens empty on next use."""
        db = self._dbs.pop(partition, None)
        if db is not None and hasattr(db, "close"):
            db.close()
        del db
        self._key_index.clear()
        shutil.rmtree(self.partition_path(partition), ignore_errors=True)
