"""`claimwatch replay`: inputs, outputs, progress, checkpoints and the diff report."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from claimwatch.audit.diff import Diff, compared_part
from claimwatch.audit.replay import Replayed, Replayer, TopicRange, read_range, topic_range
from claimwatch.audit.replay_parallel import jobs_for, replay_shared
from claimwatch.audit.replay_topic_parallel import replay_topic_shared
from claimwatch.audit.replay_topic_parallel import wants_parallel as wants_parallel_topic
from claimwatch.audit.shares import wants_parallel
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.claim import fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.wire import kafka
from claimwatch.wire.topics import TopicNames


@dataclass(slots=True)
class ReplayRequest:
    """What to replay, from where, and where the results go."""

    policy: CompiledPolicy
    input: Path | None = None
    topic: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    bootstrap: str | None = None
    partitions: int = 4
    out: Path | None = None
    to_topic: str | None = None
    diff_against: str | None = None
    changes: Path | None = None
    checkpoint: Path | None = None
    live_prefix: str = "claimwatch."
    alerts: Path | None = None
    #: processes a replay may share its partitions among (see replay_parallel and
    #: replay_topic_parallel)
    jobs: int = 1


def _progress(total: int, what: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A rich progress bar on a terminal (stderr); nothing when piped."""
    if not sys.stderr.isatty():
        return (lambda _n: None), (lambda: None)
    bar = Progress(
        TextColumn(f"replaying {what}"),
        BarColumn(),
        TextColumn("{task.completed:,}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("replay", total=total)
    bar.start()
    return (lambda n: bar.advance(task, n)), bar.stop


class Outputs:
    """Where replayed decisions go as they are made, holding only what is asked for.

    Every decision is written to the sink. The diff needs the last decision of each fact,
    and only its compared part; an output topic gets the decisions from a spool file once
    the replay is over; only the alert detectors (`--alerts`, which run in clock order over
    all partitions) need every decision kept.
    """

    def __init__(self, req: ReplayRequest, sink: IO[bytes]) -> None:
        self.sink = sink
        self.last: dict[str, dict[str, Any]] | None = {} if req.diff_against else None
        self.kept: list[dict[str, Any]] | None = [] if req.alerts is not None else None
        #: closed (and so deleted) when the replay process ends
        self.spool: IO[bytes] | None = (
            tempfile.TemporaryFile() if req.to_topic else None  # noqa: SIM115
        )

    def decided(self, record: dict[str, Any], body: bytes) -> None:
        """A decision just made: written out, and kept as far as asked."""
        self.sink.write(body + b"\n")
        self.seen(record, body)

    def decided_body(self, body: bytes) -> None:
        """A decision made in another process, as its JSON: parsed only if it is kept."""
        if self.last is None and self.kept is None:
            self.sink.write(body + b"\n")
            if self.spool is not None:
                self.spool.write(body + b"\n")
        else:
            self.decided(orjson.loads(body), body)

    def seen(self, record: dict[str, Any], body: bytes) -> None:
        """A decision made (now, or by the run a checkpoint resumes): kept as far as asked."""
        if self.last is not None:
            self.last[fact_key(record["subject"], record["field"])] = compared_part(record)
        if self.kept is not None:
            self.kept.append(record)
        if self.spool is not None:
            self.spool.write(body + b"\n")

    def spooled(self) -> Iterator[bytes]:
        """The decisions sent to the spool, in order."""
        if self.spool is None:
            return
        self.spool.seek(0)
        yield from (line.rstrip(b"\n") for line in self.spool)


def replay_file(req: ReplayRequest, outputs: Outputs) -> Replayed:
    """Replay a JSON-lines file, writing decisions as they are made.

    A large file and `req.jobs` > 1: its partitions are shared out among processes, and
    the decisions come out in the same order (streams/claimwatch/audit/replay_parallel.py).
    """
    assert req.input is not None
    jobs = jobs_for(req.jobs, req.partitions)
    if wants_parallel(str(req.input), jobs):
        return replay_shared(req.input, req.policy, req.partitions, jobs, outputs.decided_body)
    replayer = Replayer(req.policy, req.partitions, keep=False)
    replayer.on_decision = outputs.decided
    advance, stop = _progress(req.input.stat().st_size, str(req.input))
    try:
        with req.input.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                replayer.feed_line(raw, str(req.input), number)
                advance(len(raw))
    finally:
        stop()
    return replayer.finish()


def _reader(bootstrap: str | None) -> Any:
    """A consumer with no group (assign and seek; never commits), read_committed."""
    return kafka.consumer(bootstrap)


def replay_topic_any(req: ReplayRequest, outputs: Outputs) -> Replayed:
    """Replay a claims topic, in `req.jobs` processes or in this one.

    Its partitions are shared out when the range is large enough and no checkpoint is kept
    (streams/claimwatch/audit/replay_topic_parallel.py). The same decisions, in the same order.
    """
    span = None
    if req.jobs > 1 and req.checkpoint is None:
        span = asyncio.run(_range_of(req))
        jobs = jobs_for(req.jobs, len(span.end))
        if wants_parallel_topic(span, jobs):
            return replay_topic_shared(span, req.policy, req.bootstrap, jobs, outputs.decided_body)
    return asyncio.run(replay_topic(req, outputs, span))


async def _range_of(req: ReplayRequest) -> TopicRange:
    consumer = _reader(req.bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        return await _range(consumer, req)
    finally:
        await consumer.stop()


async def _range(consumer: Any, req: ReplayRequest) -> TopicRange:
    """The offsets the replay covers, fixed now (`--from`/`--to`, else the whole topic)."""
    assert req.topic is not None
    await consumer._client.force_metadata_update()
    return await topic_range(consumer, req.topic, req.since_ms, req.until_ms)


async def replay_topic(
    req: ReplayRequest, outputs: Outputs, span: TopicRange | None = None
) -> Replayed:
    """Replay a claims topic over a fixed offset range; resumable with a checkpoint.

    `span`: the range, when the caller has fixed it already.
    """
    assert req.topic is not None
    consumer = _reader(req.bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        if span is None:
            span = await _range(consumer, req)
        partitions = len(span.end)
        replayer = Replayer(req.policy, partitions, topic=req.topic, keep=False)
        done = _load_checkpoint(req, outputs)
        replayer.on_decision = outputs.decided
        remaining = sum(span.end[p] - span.start[p] for p in span.end if p not in done)
        advance, stop = _progress(remaining, req.topic)
        current: int | None = None
        try:
            async for record in read_range(consumer, span, {p: span.end[p] for p in done}):
                if current is not None and record.partition != current:
                    _partition_done(req, replayer, current, done, outputs.sink)
                current = record.partition
                replayer.feed_record(record)
                advance(1)
            if current is not None:
                _partition_done(req, replayer, current, done, outputs.sink)
        finally:
            stop()
        return replayer.finish()
    finally:
        await consumer.stop()


def _partition_done(
    req: ReplayRequest, replayer: Replayer, partition: int, done: set[int], sink: IO[bytes]
) -> None:
    replayer.finish_partition(partition)
    done.add(partition)
    _save_checkpoint(req, done, sink)


def _load_checkpoint(req: ReplayRequest, outputs: Outputs) -> set[int]:
    """The partitions a checkpoint says are done; their decisions are taken in again."""
    if req.checkpoint is None or not req.checkpoint.exists():
        return set()
    saved = orjson.loads(req.checkpoint.read_bytes())
    outputs.sink.truncate(saved["out_bytes"])
    outputs.sink.seek(saved["out_bytes"])
    assert req.out is not None
    with req.out.open("rb") as handle:
        for line in handle:
            if line.strip():
                outputs.seen(orjson.loads(line), line.rstrip(b"\n"))
    return set(saved["done"])


def _save_checkpoint(req: ReplayRequest, done: set[int], sink: IO[bytes]) -> None:
    if req.checkpoint is None:
        return
    sink.flush()
    state = {"done": sorted(done), "out_bytes": sink.tell()}
    req.checkpoint.write_bytes(orjson.dumps(state))


def recorded_decisions(
    source: str, bootstrap: str | None, require: tuple[str, ...] = ()
) -> Iterable[dict[str, Any]]:
    """Decisions from a JSON-lines file (read as they are used), or from a topic (repeats kept).

    A record without a key of `require` raises RuntimeError naming it (FILE:LINE).
    """
    path = Path(source)
    if path.exists():
        return _file_decisions(path, require)
    records = asyncio.run(_read_topic(source, bootstrap))
    for number, record in enumerate(records, start=1):
        _check(record, require, f"{source}: record {number}")
    return records


def _file_decisions(path: Path, require: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        yield from iter_decision_lines(handle, str(path), require)


def decision_lines(lines: Iterable[bytes], name: str) -> list[dict[str, Any]]:
    """Decision records of JSON lines; a line that is not one raises RuntimeError(FILE:LINE)."""
    return list(iter_decision_lines(lines, name))


def iter_decision_lines(
    lines: Iterable[bytes], name: str, require: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """`decision_lines`, one record at a time (each holding the keys of `require`)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:  # reported as one line, exit 1
            raise RuntimeError(f"{name}:{number}: not a decision: {exc}") from None
        _check(record, require, f"{name}:{number}")
        yield record


def _check(record: object, require: tuple[str, ...], where: str) -> None:
    """RuntimeError naming `where` unless `record` is an object with every required key."""
    if not isinstance(record, dict):
        raise RuntimeError(f"{where}: not a decision: not a JSON object")
    missing = [key for key in require if not isinstance(record.get(key), str)]
    if missing:
        raise RuntimeError(f"{where}: not a decision: no string `{missing[0]}`")


async def _read_topic(topic: str, bootstrap: str | None) -> list[dict[str, Any]]:
    consumer = _reader(bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        await consumer._client.force_metadata_update()
        span = await topic_range(consumer, topic, None, None)
        return [orjson.loads(r.value) async for r in read_range(consumer, span) if r.value]
    finally:
        await consumer.stop()


async def write_topic(topic: str, bodies: Iterable[bytes], bootstrap: str | None) -> None:
    """Send replayed decisions (their JSON) to a topic of the user's choice (keyed by fact)."""
    producer = kafka.producer(bootstrap)
    try:
        await producer.start()
        for body in bodies:
            record = orjson.loads(body)
            key = fact_key(record["subject"], record["field"]).encode()
            await producer.send(topic, key=key, value=body)
        await producer.flush()
    finally:
        await producer.stop()


def refuse_live_topic(name: str, prefix: str) -> None:
    """A replay never writes to the live decisions, resolutions or alerts topics."""
    names = TopicNames(prefix)
    live = {
        names.decisions,
        names.resolutions,
        names.alerts,
        names.claims,
        names.conflicts,
        names.dlq,
        names.alerts_input,
    }
    if name in live or name.endswith("-changelog"):
        raise ValueError(f"{name} is a live topic: replay writes only to a topic of your own")


def print_diff(result: Diff, console: Console) -> None:
    """The per-field summary table of a diff."""
    table = Table(title="replay vs recorded (last decision per fact)")
    for column in ("field", "facts", "changed", "transitions"):
        table.add_column(column)
    for name in sorted(result.fields):
        summary = result.fields[name]
        moves = ", ".join(f"{k}: {v}" for k, v in sorted(summary.transitions.items()))
        table.add_row(name, str(summary.compared), str(summary.changed), moves)
    console.print(table)


def replay_alerts(policy: CompiledPolicy, decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the alert detectors over replayed decisions in clock order (`--alerts`).

    The live worker moves its detectors with each partition's ticks; a replay moves them with
    the decisions' own times, so alerts that only a quiet stretch would raise (silence) can
    come out later, at the next decision, than they did live.
    """
    runner = AlertRunner(policy)
    timed = sorted((parse_rfc3339(d["decided_at"]), n, d) for n, d in enumerate(decisions))
    alerts: list[dict[str, Any]] = []
    for at, _, decision in timed:
        alerts += [dict(a) for a in runner.on_clock(at)]
        alerts += [dict(a) for a in runner.on_decision(decision, at)]
    return alerts
