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
from typing import Any, Final

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

    def persisted_offset(self, tp: Any) -> int | None:
        offset: int | None = super().persisted_offset(tp)
        if offset is None:
            return None
        end = _changelog_end(self.app, tp)
        if end is not None and offset > end:
            log.warning(
                "local store %s (partition %d) has applied changelog offset %d but %s ends at "
                "%d: the topic was recreated or the directory belongs to another deployment; "
                "wiping this partition's local state and restoring it from the changelog",
                self.table.name,
                tp.partition,
                offset,
                tp.topic,
                end,
            )
            self.wipe(tp.partition)
            return None
        return offset

    def wipe(self, partition: int) -> None:
        """Close and delete one partition's local database; it reopens empty on next use."""
        db = self._dbs.pop(partition, None)
        if db is not None and hasattr(db, "close"):
            db.close()
        del db
        self._key_index.clear()
        shutil.rmtree(self.partition_path(partition), ignore_errors=True)


def _changelog_end(app: Any, tp: Any) -> int | None:
    """The last offset of a changelog partition as recovery measured it (None: not known)."""
    recovery = app.tables.recovery
    for highwaters in (recovery.active_highwaters, recovery.standby_highwaters):
        if tp in highwaters:
            return int(highwaters[tp])
    return None
