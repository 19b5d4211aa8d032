"""Sending what an edge returned through the app's Faust topics, and counting it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from claimwatch.worker.app import Pipeline
from claimwatch.worker.metrics import Metrics, Tally, dlq_reason_label, increment
from claimwatch.worker.outgoing import Outgoing


def topics_of(pipe: Pipeline) -> dict[str, Any]:
    """The Faust topic of every output (and input) topic name an edge may send to."""
    return {
        pipe.names.claims: pipe.claims,
        pipe.names.decisions: pipe.decisions,
        pipe.names.conflicts: pipe.conflicts,
        pipe.names.dlq: pipe.dlq,
        pipe.names.alerts_input: pipe.alerts_input,
        pipe.names.verdicts: pipe.verdicts,
        pipe.names.verdicts_decisions: pipe.verdicts_decisions,
    }


async def send_through(topic: Any, out: Outgoing) -> None:
    """Send one record through its Faust topic (so it joins a transaction, if any)."""
    await topic.send(
        key=out.key, value=out.value, partition=out.partition, headers=list(out.headers) or None
    )


async def send_counted(
    topics: Mapping[str, Any], sends: Iterable[Outgoing], events: Iterable[str], metrics: Metrics
) -> None:
    """Send what an edge returned through its Faust topics; count its events and dead letters."""
    sends = list(sends)
    for out in sends:
        await send_through(topics[out.topic], out)
    count(metrics, sends, events)


def count(
    metrics: Metrics,
    sends: Iterable[Outgoing],
    events: Iterable[str],
    tally: Tally | None = None,
) -> None:
    """Count an edge's events, and its dead letters by reason (into `tally`, when given)."""
    add = tally.add if tally is not None else increment
    for out in sends:
        if out.headers:
            reason = dict(out.headers).get("claimwatch.reason", b"").decode()
            add(metrics.dead_letters, dlq_reason_label(reason))
    for name in events:
        add(metrics.events, name)
