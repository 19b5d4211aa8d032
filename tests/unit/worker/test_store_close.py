"""The default store's partition databases keep every entry and offset across a clean stop."""

from __future__ import annotations

import gc
from pathlib import Path

import faust
import pytest
from faust.types import TP as _TP

from streams.worker.store import HealingRocksDBStore


def _store(tmp_path: Path) -> HealingRocksDBStore:
    app = faust.App("store-close-test", broker="kafka://127.0.0.1:1", datadir=str(tmp_path))
    return HealingRocksDBStore("rocksdb://", app, app.Table("facts"))


@pytest.mark.parametrize("stop", ["stop", "revoke"])
def test_entries_and_offsets_survive_a_clean_stop(tmp_path: Path, stop: str) -> None:
    """Dropping the databases (the store's stop, a revoke) closes them: a reopen sees all."""
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
