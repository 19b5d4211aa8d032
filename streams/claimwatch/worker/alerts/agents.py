"""The detectors agent: decisions and partition ticks in, alerts and source figures out."""

from __future__ import annotations

from claimwatch.wire.codec import dumps
from claimwatch.worker.agent_loop import guarded_agent, guarded_sender
from claimwatch.worker.alerts.edge import AlertBatch, AlertRuntime
from claimwatch.worker.app import Pipeline
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics, dlq_reason_label
from claimwatch.worker.partition_state import forget_on_rebalance
from claimwatch.worker.sending import send_through, topics_of
from claimwatch.worker.supervision import Supervise


def install_alerts(
    pipe: Pipeline, alerting: AlertRuntime, metrics: Metrics, supervise: Supervise
) -> None:
    """Register the detectors agent over the alerts-input topic."""
    app = pipe.app
    guard = guarded_sender(pipe, topics_of(pipe), metrics)

    async def detect_one(record: Record) -> None:
        batch = alerting.handle(record.partition, record.value or b"")
        count_quarantined(metrics, batch)
        if batch.rejected is not None:
            origin = (record.topic, record.partition, record.offset)
            letter = dead_letter(
                pipe.names, origin, record.key, record.value or b"", batch.rejected
            )
            await send_through(pipe.dlq, letter)
            metrics.dead_letters.labels(dlq_reason_label(batch.rejected)).inc()
            return
        for alert in batch.alerts:
            key = str(alert.get("field", "")).encode()
            await pipe.alerts.send(key=key, value=dumps(alert))
            metrics.observe_alert(alert)
        for fig in batch.figures:
            metrics.observe_source(
                fig.field, fig.source, fig.status, fig.lag_seconds, fig.dissent_ratio
            )

    guarded_agent(
        pipe,
        pipe.alerts_input,
        "claimwatch.worker.alerts.agents.detect",
        supervise,
        guard,
        detect_one,
        lambda _p: alerting.forget(),
        batched=True,
    )

    @pipe.detectors.on_recover
    async def on_detectors_recovered() -> None:
        alerting.forget()

    forget_on_rebalance(app, pipe.names.alerts_input, lambda _moved: alerting.forget())


def count_quarantined(metrics: Metrics, batch: AlertBatch) -> None:
    """Count the fields a record's handling reset (`claimwatch_quarantined_total{alerts}`)."""
    if batch.quarantined:
        metrics.quarantined.labels("alerts").inc(batch.quarantined)
