"""The verdicts agent and its tick timer: signals and ticks in, one decision per request out."""

from __future__ import annotations

import time

import faust

from streams.worker.app import Pipeline
from streams.worker.edge import TICK_KEY, Record, record_of, tick_value
from streams.worker.faust_kit import (
    Supervise,
    forget_on_rebalance,
    guarded_sender,
    send_counted,
    topics_of,
)
from streams.worker.metrics import Metrics
from streams.worker.verdicts.edge import VerdictsEdge


def install_verdicts(
    pipe: Pipeline, edge: VerdictsEdge, metrics: Metrics, supervise: Supervise
) -> None:
    """Register the verdicts agent and the timer writing ticks into its partitions."""
    app = pipe.app
    settings = pipe.settings
    topics = topics_of(pipe)
    guard = guarded_sender(pipe, topics, metrics)

    async def verdict_one(record: Record) -> None:
        handled = edge.handle(record.partition, record.offset, record.key, record.value or b"")
        await send_counted(topics, handled.sends, handled.events, metrics)

    @app.agent(pipe.verdicts, name="streams.agents.process_verdicts", concurrency=1)
    @supervise("process_verdicts")
    async def process_verdicts(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            await guard.run(record_of(event), verdict_one, lambda _p: edge.forget())

    @app.timer(settings.tick_interval_s)
    async def write_verdict_ticks() -> None:
        at = int((time.time() - settings.lateness_s) * 1_000_000)
        for tp in app.assignor.assigned_actives():
            if tp.topic == pipe.names.verdicts:
                await pipe.verdicts.send(key=TICK_KEY, value=tick_value(at), partition=tp.partition)

    @pipe.verdicts_table.on_recover
    async def on_verdicts_recovered() -> None:
        edge.forget()

    forget_on_rebalance(app, pipe.names.verdicts, edge.forget)
