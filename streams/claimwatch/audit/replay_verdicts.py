"""Replay of the verdicts topic: re-decide every request's signals under a policy.

The records of `<prefix>verdicts` (the checks' signals and the worker's ticks) go, per
partition in offset order and with their broker times, into the worker's own
`VerdictsEdge` over an in-memory table, exactly as the live worker handed them in; the
decisions it makes are collected. Nothing is sent anywhere. Under the policy the worker ran,
the replay makes the decisions the worker wrote to `<prefix>verdicts.decisions`, with the
same decision ids; under another policy, it shows what that policy would have decided.

Records the live worker re-sent to their home partition (a key that is not the request's
partition) are skipped here as they were there: their re-sent copies are on the topic.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claimwatch.audit.replay import partitions_of, read_range, topic_range
from claimwatch.core.argue.verdicts import VerdictConfig
from claimwatch.wire import kafka
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.input_record import Record
from claimwatch.worker.verdicts.edge import VerdictsEdge


def replay_verdicts(
    records: Iterable[Record], config: VerdictConfig, names: TopicNames, partitions: int
) -> list[dict[str, Any]]:
    """The decisions the verdicts edge makes of `records` (each partition's in offset order).

    No wall clock bounds the partition clocks (`wall_clock_us=None`): a replay runs long
    after the records were written. A tombstone is skipped (the live worker dead-letters it).
    """
    edge = VerdictsEdge(config, names, partitions, table={})
    decisions: list[dict[str, Any]] = []
    for record in records:
        if record.value is None:
            continue
        handled = edge.handle(
            record.partition, record.offset, record.key, record.value, record.timestamp_us
        )
        decisions.extend(handled.decisions)
    return decisions


async def replay_verdicts_topic(
    bootstrap: str | None,
    topic: str,
    config: VerdictConfig,
    names: TopicNames,
    since_ms: int | None = None,
) -> list[dict[str, Any]]:
    """Replay `topic` (from `since_ms`, else from its beginning) to its end as of now.

    RuntimeError naming the topic when it does not exist.
    """
    partitions = await partitions_of(bootstrap, topic)
    consumer = kafka.consumer(bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        span = await topic_range(consumer, topic, partitions, since_ms, None)
        records = [record async for record in read_range(consumer, span)]
    finally:
        await consumer.stop()
    return replay_verdicts(records, config, names, len(partitions))
