"""The worker's timers: ticks into active partitions, full collections, store flushes."""

from __future__ import annotations

import time
from typing import Any

import faust

from claimwatch.worker.app import Pipeline
from claimwatch.worker.collector import collect_full
from claimwatch.worker.store import flush_all
from claimwatch.worker.ticks import TICK_KEY, tick_at, tick_value


def install_ticks(pipe: Pipeline, topic: Any, name: str) -> None:
    """A timer writing a tick (wall clock minus the lateness) into each active partition."""
    settings = pipe.settings

    @pipe.app.timer(settings.tick_interval_s, name=f"ticks:{name}")
    async def write_ticks() -> None:
        at = tick_at(time.time_ns(), settings.lateness_s)
        for tp in pipe.app.assignor.assigned_actives():
            if tp.topic == name:
                await topic.send(key=TICK_KEY, value=tick_value(at), partition=tp.partition)


def install_full_collection(app: faust.App, every_s: float) -> None:
    """A timer running the full garbage collection every `every_s` s (see worker.collector)."""
    if every_s <= 0:
        return  # Python's own collector policy: nothing to run

    @app.timer(every_s, name="full-collection")
    async def full_collection() -> None:
        collect_full()


def install_store_flush(app: faust.App, every_s: float) -> None:
    """A timer flushing the default store's memory tables every `every_s` s (worker.store).

    The store writes without rocksdb's write-ahead log: the flush bounds what a SIGKILL
    costs the next start (the changelog it reads again), as Kafka Streams' flush at commit.
    """

    @app.timer(every_s, name="store-flush")
    async def store_flush() -> None:
        flush_all(app)
