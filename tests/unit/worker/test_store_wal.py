"""The default store writes without rocksdb's write-ahead log, and a clean stop keeps it all."""

from __future__ import annotations

import gc
from pathlib import Path

import faust
import pytest
from faust.types import TP as _TP

from streams.worker.store import HealingRocksDBStore


def _store(tmp_path: Path) -> HealingRocksDBStore:
    app = faust.App("wal-test", broker="kafka://127.0.0.1:1", datadir=str(tmp_path))
    return HealingRocksDBStore("rocksdb://", app, app.Table("facts"))


def _log_bytes(store: HealingRocksDBStore, partition: int) -> int:
    return sum(f.stat().st_size for f in Path(store.partition_path(partition)).glob("*.log"))


def test_a_partition_database_writes_nothing_to_its_write_ahead_log(tmp_path: Path) -> None:
    """Puts and batches of the store's databases skip the log (the changelog is the log)."""
    store = _store(tmp_path)
    db = store._db_for_partition(3)
    for n in range(200):
        db.put(b"k%d" % n, b"v" * 500)
    assert 0 == _log_bytes(store, 3)


@pytest.mark.parametrize("stop", ["stop", "revoke"])
def test_entries_written_without_the_log_survive_a_clean_stop(tmp_path: Path, stop: str) -> None:
    """Dropping the databases (the store's stop, a revoke) flushes them: a reopen sees all."""
    store = _store(tmp_path)
    for n in range(200):
        store._db_for_partition(n % 2).put(b"k%d" % n, b"v%d" % n)
    store.set_persisted_offset(_TP(store.table.changelog_topic.get_topic_name(), 1), 99)
    if stop == "stop":
        store._dbs.clear()  # what `stop` does
    else:
        store.revoke_partitions(
            store.table, {_TP(t, p) for t in store.table.changelog_topic.topics for p in (0, 1)}
        )
    gc.collect()
    again = _store(tmp_path)
    found = {key: value for p in (0, 1) for key, value in again.partition_items(p)}
    assert {b"k%d" % n: b"v%d" % n for n in range(200)} == found
    assert 99 == again.persisted_offset(_TP(again.table.changelog_topic.get_topic_name(), 1))
