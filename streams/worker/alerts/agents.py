"""The detectors agent: decisions and partition ticks in, alerts and source figures out."""

from __future__ import annotations

import faust

from streams.wire.codec import dumps
from streams.worker.alerts.edge import AlertRuntime
from streams.worker.app import Pipeline
from streams.worker.edge import Record, record_of
from streams.worker.faust_kit import (
    Supervise,
    batched_events,
    forget_on_rebalance,
    guarded_sender,
    topics_of,
)
from streams.worker.metrics import Metrics


def install_alerts(
    pipe: Pipeline, alerting: AlertRuntime, metrics: Metrics, supervise: Supervise
) -> None:
    """Register the detectors agent over the alerts-input topic."""
    app = pipe.app
    settings = pipe.settings
    guard = guarded_sender(pipe, topics_of(pipe), metrics)

    async def detect_one(record: Record) -> None:
        batch = alerting.handle(record.partition, record.value or b"")
        for alert in batch.alerts:
            key = str(alert.get("field", "")).encode()
            await pipe.alerts.send(key=key, value=dumps(alert))
            metrics.observe_alert(alert)
        for fig in batch.figures:
            metrics.observe_source(
                fig.field, fig.source, fig.status, fig.lag_seconds, fig.dissent_ratio
            )

    @app.agent(pipe.alerts_input, name="streams.agents.detect", concurrency=1)
    @supervise("detect")
    async def detect(stream: faust.StreamT[bytes]) -> None:
        async for event in batched_events(stream, settings.batch_max, settings.batch_within_s):
            await guard.run(record_of(event), detect_one, lambda _p: alerting.forget())

    @pipe.detectors.on_recover
    async def on_detectors_recovered() -> None:
        alerting.forget()

    forget_on_rebalance(app, pipe.names.alerts_input, lambda _moved: alerting.forget())
