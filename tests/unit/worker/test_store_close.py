"""The default store's partition databases: whole across a clean stop, and across a SIGKILL."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import faust
import pytest
from claimwatch.worker.store import HealingRocksDBStore, flush_all, register, store_url
from faust.types import TP as _TP

from tests.support.paths import REPO


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


def _log_bytes(store: HealingRocksDBStore, partition: int) -> int:
    return sum(f.stat().st_size for f in Path(store.partition_path(partition)).glob("*.log"))


def test_a_partition_database_writes_nothing_to_its_write_ahead_log(tmp_path: Path) -> None:
    """Puts of the store's databases skip rocksdb's log (the changelog topic is the log)."""
    store = _store(tmp_path)
    db = store._db_for_partition(3)
    for n in range(200):
        db.put(b"k%d" % n, b"v" * 500)
    assert 0 == _log_bytes(store, 3)


def _write_flush_write_and_die(tmp_path: Path) -> None:
    """In a forked child: 100 entries and offset 99, a flush, 100 more and offset 199, SIGKILL."""
    store = _store(tmp_path)
    tp = _TP(store.table.changelog_topic.get_topic_name(), 0)
    db = store._db_for_partition(0)
    for n in range(100):
        db.put(b"k%d" % n, b"v%d" % n)
    store.set_persisted_offset(tp, 99)
    db.flush(wait=True)  # what the worker's timer starts (`flush_all`), waited for here
    for n in range(100, 200):
        db.put(b"k%d" % n, b"v%d" % n)
    store.set_persisted_offset(tp, 199)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_sigkill_leaves_the_state_of_the_last_flush_whole(tmp_path: Path) -> None:
    """Killed after a flush and more writes: a reopen sees the flushed entries and their offset.

    The writes after the flush are gone with the process (no log); the offset read back is
    the one written with the entries that survived, so a restore reads the changelog from
    there and loses nothing. (A fresh interpreter, not a fork: rocksdb's threads in this
    process would hold their locks in a forked child for ever.)
    """
    code = (
        "import sys; from pathlib import Path; "
        "from tests.unit.worker.test_store_close import _write_flush_write_and_die; "
        "_write_flush_write_and_die(Path(sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=REPO, timeout=60, check=False
    )
    again = _store(tmp_path)
    found = dict(again.partition_items(0))
    offset = again.persisted_offset(_TP(again.table.changelog_topic.get_topic_name(), 0))
    expected = {b"k%d" % n: b"v%d" % n for n in range(100)}
    assert (-signal.SIGKILL, 99, expected) == (done.returncode, offset, found)


@pytest.mark.parametrize(("store", "expected"), [("rocksdb://", 2), ("memory://", 0)])
def test_flush_all_reaches_every_table_of_the_default_store(
    tmp_path: Path, store: str, expected: int
) -> None:
    """The timer's flush reaches each table on the default store; the memory store has none."""
    register()
    app = faust.App(
        "flush-test", broker="kafka://127.0.0.1:1", datadir=str(tmp_path), store=store_url(store)
    )
    for name in ("facts", "resolutions"):
        app.Table(name, partitions=2)
    assert expected == flush_all(app)


def test_a_flush_writes_the_memory_table_to_disk(tmp_path: Path) -> None:
    """After `flush` a partition's entries are in a table file (they were only in memory)."""
    store = _store(tmp_path)
    db = store._db_for_partition(1)
    for n in range(100):
        db.put(b"k%d" % n, b"v" * 100)
    before = list(Path(store.partition_path(1)).glob("*.sst"))
    store.flush()
    deadline = time.monotonic() + 10.0
    while not list(Path(store.partition_path(1)).glob("*.sst")) and time.monotonic() < deadline:
        time.sleep(0.05)
    after = list(Path(store.partition_path(1)).glob("*.sst"))
    assert (0, 1) == (len(before), len(after))
