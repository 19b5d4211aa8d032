"""The verdicts agent and its tick timer: signals and ticks in, one decision per request out."""

from __future__ import annotations

from claimwatch.worker.agent_loop import record_agent
from claimwatch.worker.app import Pipeline
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.partition_state import forget_on_rebalance
from claimwatch.worker.sending import topics_of
from claimwatch.worker.supervision import Supervise
from claimwatch.worker.timers import install_ticks
from claimwatch.worker.verdicts.edge import VerdictsEdge, VerdictsHandled


def install_verdicts(
    pipe: Pipeline, edge: VerdictsEdge, metrics: Metrics, supervise: Supervise
) -> None:
    """Register the verdicts agent and the timer writing ticks into its partitions."""
    app = pipe.app

    def handle(record: Record) -> VerdictsHandled:
        out = edge.handle(
            record.partition, record.offset, record.key, record.value or b"", record.timestamp_us
        )
        if out.quarantined:
            metrics.quarantined.labels("verdicts").inc(out.quarantined)
        return out

    record_agent(
        pipe,
        pipe.verdicts,
        "claimwatch.worker.verdicts.agents.process_verdicts",
        supervise,
        metrics,
        topics_of(pipe),
        handle,
        lambda _p: edge.forget(),
    )
    install_ticks(pipe, pipe.verdicts, pipe.names.verdicts)

    @pipe.verdicts_table.on_recover
    async def on_verdicts_recovered() -> None:
        edge.forget()

    forget_on_rebalance(app, pipe.names.verdicts, edge.forget)
