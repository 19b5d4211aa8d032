"""A topic replay on several cores: the topic's partitions shared out among forked processes.

A topic replay reads partition after partition, each up to the end offset fixed when it
starts, and nothing in one partition reads another's state. So process k replays the
partitions p with p mod jobs == k exactly as the one-process replay does (records in offset
order, the partition's open windows closed at its end) and writes each partition's
decisions to a file of its own; the parent hands the files on in partition order. The
decisions reach the outputs in the one-process order, byte for byte, with the same errors.
The range is fixed by the parent before it forks, with no event loop running; each process
reads with a consumer of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from claimwatch.audit.replay import Replayed, Replayer, TopicRange, read_range
from claimwatch.audit.resolve_file import LineError
from claimwatch.audit.shares import JOB, forked
from claimwatch.core.policy import CompiledPolicy
from claimwatch.wire import kafka

#: Topic ranges with fewer records than this are replayed in one process (forking and a
#: consumer per process cost more than they save).
PARALLEL_FROM_RECORDS: Final = 20_000


@dataclass(frozen=True, slots=True)
class Part:
    """What one process made of its partitions: a decisions file and the errors of each."""

    outputs: dict[int, str]
    errors: dict[int, list[LineError]]
    records: int


def wants_parallel(span: TopicRange, jobs: int) -> bool:
    """Whether a topic range is worth sharing out: enough records, more than one job."""
    return jobs > 1 and span.total() >= PARALLEL_FROM_RECORDS


def replay_topic_shared(
    span: TopicRange,
    policy: CompiledPolicy,
    bootstrap: str | None,
    jobs: int,
    decided: Callable[[bytes], None],
) -> Replayed:
    """Replay `span` in `jobs` processes; each decision's JSON to `decided`, in order.

    Returns the errors (in the one-process order) and the records read; no decisions held.
    """
    job = {"span": span, "policy": policy, "bootstrap": bootstrap, "jobs": jobs}
    with forked(_part, jobs, "claimwatch-topic-replay-", **job) as parts:
        files = {p: name for part in parts for p, name in part.outputs.items()}
        for partition in sorted(files):
            with open(files[partition], "rb") as handle:
                for line in handle:
                    decided(line[:-1])
    errors = {p: found for part in parts for p, found in part.errors.items()}
    result = Replayed(records=sum(part.records for part in parts))
    result.errors = [e for p in sorted(errors) for e in errors[p]]
    return result


def _part(index: int) -> Part:
    """One process's partitions of the range, replayed (its own event loop and consumer)."""
    return asyncio.run(_replay_partitions(index))


async def _replay_partitions(index: int) -> Part:
    span: TopicRange = JOB["span"]
    jobs: int = JOB["jobs"]
    mine = [p for p in sorted(span.end) if p % jobs == index and span.start[p] < span.end[p]]
    replayer = Replayer(JOB["policy"], len(span.end), topic=span.topic, keep=False)
    outputs: dict[int, str] = {}
    errors: dict[int, list[LineError]] = {}
    consumer = kafka.consumer(JOB["bootstrap"])
    try:
        await consumer.start()
        for partition in mine:
            output = str(Path(JOB["work"]) / f"partition-{partition}.jsonl")
            before = len(replayer.result.errors)
            with open(output, "wb") as sink:
                replayer.on_decision = _writer(sink)
                one = TopicRange(
                    span.topic, {partition: span.start[partition]}, {partition: span.end[partition]}
                )
                async for record in read_range(consumer, one):
                    replayer.feed_record(record)
                replayer.finish_partition(partition)
            outputs[partition] = output
            errors[partition] = replayer.result.errors[before:]
    finally:
        await consumer.stop()
    return Part(outputs, errors, replayer.result.records)


def _writer(sink: IO[bytes]) -> Callable[[object, bytes], None]:
    def write(_record: object, body: bytes) -> None:
        sink.write(body + b"\n")

    return write
