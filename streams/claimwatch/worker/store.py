"""The worker's default table store: Faust's rocksdb store that heals local state Kafka disowns.

A local partition store remembers the changelog offset it has applied. When that offset is
beyond the changelog's end (the topics were deleted and recreated, or the directory was
copied from another deployment), Faust refuses to start (`ConsistencyError`). Kafka Streams
treats the same case as a corrupted task: it wipes the local store and restores it from the
changelog. So does this store, for that partition only, with one warning.

A partition this worker takes over is brought up to its changelog's end in bulk first
(`claimwatch.worker.catchup`), in batches rather than Faust's record by record; Faust's
recovery then reads whatever is left (nothing, normally).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Final

import rocksdict
from faust.stores import STORES
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth, server_list

from claimwatch.worker.catchup import Apply, ChangelogRecord, Gap, catch_up
from claimwatch.worker.faust_private import RocksDBStoreHooks

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


def _no_wal() -> rocksdict.WriteOptions:
    options = rocksdict.WriteOptions()
    options.disable_wal = True  # type: ignore[method-assign,assignment]  # a property (stub wrong)
    return options


#: Writes without rocksdb's write-ahead log, as Kafka Streams writes its stores: the
#: changelog topic makes a table durable, not the local database. A partition's entries
#: and the changelog offset they include (written when the broker acknowledges a change)
#: are in one database, written in order, so what a crash leaves is an earlier state of it,
#: whole, with its own offset: the restore reads the changelog from there (every later
#: write is in the changelog before its input offset is committed). What bounds how much
#: earlier is the flush of the memory tables every FLUSH_EVERY_S (`flush_all`), as Kafka
#: Streams flushes its stores at each commit; a clean close flushes too.
NO_WAL: Final = _no_wal()
#: How often the worker flushes its stores' memory tables to disk (seconds): a SIGKILL
#: costs a restart at most this much changelog to read again (without log or flush it cost
#: everything since the start; docs/operating/index.md#local-state-and-restarts).
FLUSH_EVERY_S: Final = 5.0


class HealingRocksDBStore(RocksDBStoreHooks):
    """Rocksdb store whose partitions ahead of their changelog are wiped and restored."""

    #: rocksdict (a dependency) rather than python-rocksdb: `apply_records` writes its batches
    use_rocksdict = True

    #: the (app, generation) whose rebalance the stores have already healed and caught up:
    #: the first table's store does it for every table, in one end-offsets request (each
    #: request crosses into Faust's consumer thread, which answers slowly during a
    #: rebalance) and one bulk read
    _handled: ClassVar[tuple[int, int] | None] = None

    async def on_rebalance(
        self, assigned: Any, revoked: Any, newly_assigned: Any, generation_id: int = 0
    ) -> None:
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)
        generation = (id(self.app), generation_id)
        if HealingRocksDBStore._handled == generation:
            return
        HealingRocksDBStore._handled = generation
        stores = stores_of(self.app)
        owned = {t: s for s in stores for t in s.table.changelog_topic.topics}
        mine = sorted(tp for tp in newly_assigned if tp.topic in owned)
        if not mine:
            return
        ends = dict(await self.app.consumer.highwaters(*mine))
        for tp in mine:
            owned[tp.topic].heal(tp, ends.get(tp))
        actives = self.app.assignor.assigned_actives()
        gaps = [owned[tp.topic].gap(tp, ends[tp]) for tp in mine if tp in actives and tp in ends]
        await _catch_up(self.app, gaps, lambda t, p, rs: owned[t].apply_records(p, rs))

    def opened(self, db: Any) -> Any:
        """A partition's database as it opens, with its write-ahead log off (see `NO_WAL`)."""
        db.set_write_options(NO_WAL)
        return db

    def flush(self) -> None:
        """Start a flush of every open partition's memory table (it runs in the background)."""
        for db in self.open_databases():
            db.flush(wait=False)

    def heal(self, tp: Any, end: int | None) -> None:
        """Wipe a partition whose applied offset is beyond its changelog's end."""
        offset = super().persisted_offset(tp)
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

    def gap(self, tp: Any, end: int) -> Gap:
        """What a partition lacks of its changelog (from the offset after the applied one)."""
        offset = super().persisted_offset(tp)
        return Gap(tp.topic, tp.partition, None if offset is None else offset + 1, end)

    def apply_records(self, partition: int, records: Sequence[ChangelogRecord]) -> None:
        """Write changelog records and the offset reached to a partition in one atomic write."""
        batch = rocksdict.WriteBatch(raw_mode=True)
        for record in records:
            if record.key is None:  # not a table entry (Faust never writes one)
                continue
            if record.value is None:
                batch.delete(record.key)
            else:
                batch.put(record.key, record.value)
        batch.put(self.offset_key, str(records[-1].offset).encode())
        self.database(partition).write(batch)
        self.forget_key_index()

    def partition_items(self, partition: int) -> Iterator[tuple[bytes, bytes]]:
        """The entries of one partition's local database (Faust's offset key left out)."""
        for key, value in self.database(partition).items():
            if key != self.offset_key:
                yield key, value

    def revoke_partitions(self, table: Any, tps: Any) -> None:
        """Drop the databases of revoked partitions (dropping the last reference closes one).

        Faust's version also runs a full `gc.collect()` for every table on every rebalance,
        while no partition is processed.
        """
        for tp in tps:
            if tp.topic in table.changelog_topic.topics:
                self.drop_database(tp.partition)

    async def stop(self) -> None:
        """Drop every database (without Faust's `gc.collect()`, which delays the LeaveGroup)."""
        self.drop_databases()

    def wipe(self, partition: int) -> None:
        """Close and delete one partition's local database; it reopens empty on next use."""
        db = self.drop_database(partition)
        if db is not None and hasattr(db, "close"):
            db.close()
        del db
        self.forget_key_index()
        shutil.rmtree(self.partition_path(partition), ignore_errors=True)


async def _catch_up(app: Any, gaps: Sequence[Gap], apply: Apply) -> None:
    """Bulk-read the gaps with the app's broker settings; on any failure Faust reads them."""
    wanted = [g for g in gaps if g.missing != 0]
    if not wanted:
        return
    conf = app.conf
    client = {
        "bootstrap_servers": server_list(conf.broker, 9092),
        "client_id": f"{conf.broker_client_id}-catchup",
        **credentials_to_aiokafka_auth(conf.broker_credentials, conf.ssl_context),
    }
    try:
        done = await catch_up(client, wanted, apply)
    except Exception as exc:  # the shortcut failed: Faust's recovery reads everything left
        log.warning(
            "changelog catch-up failed (%s: %s); Faust recovers the rest", type(exc).__name__, exc
        )
        return
    log.info(
        "%d changelog records of %d partitions caught up in %.2fs%s",
        done.records,
        len(wanted),
        done.seconds,
        "" if done.complete else " (Faust's recovery reads the rest)",
    )


def stores_of(app: Any) -> list[HealingRocksDBStore]:
    """The stores of this module among the app's tables (one a table)."""
    return [t.data for t in app.tables.values() if isinstance(t.data, HealingRocksDBStore)]


def flush_all(app: Any) -> int:
    """Flush the memory tables of every store of this module in the app; how many stores."""
    stores = stores_of(app)
    for store in stores:
        store.flush()
    return len(stores)


def partition_scan(table: Any) -> Callable[[int], Iterable[tuple[bytes, bytes]]]:
    """A lister of one partition's entries of a Faust table.

    Read apart when the store keeps partitions apart (this module's store); else every
    entry, and the caller keeps the partition's own.
    """

    def items_of(partition: int) -> Iterable[tuple[bytes, bytes]]:
        store = table.data  # looked up when asked: Faust makes the store when the table starts
        if isinstance(store, HealingRocksDBStore):
            return store.partition_items(partition)
        return list(table.items())

    return items_of
