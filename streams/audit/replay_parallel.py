"""A file replay on several cores: the partitions shared out among forked processes.

A file replay runs one partition clock per partition, and nothing in one partition reads
another's state, so each partition is replayed whole by one process. Every process reads
the whole file and feeds the lines whose fact's home partition it owns (partition mod the
processes); a line that names no fact goes to the first. So each line is fed to exactly one
replayer, as the one-process replay feeds it. Each process writes its decisions to a file
of its own, every one tagged with where the one-process replay makes it: the input line it
was made on and its place among that line's decisions, or, for the windows closed at the
end of the input, its partition and its place there. The parent merges the files by tag,
so decisions reach the outputs in the one-process order and the output is byte for byte
the same. Processes are forked (the compiled policy is inherited, not sent).
"""

from __future__ import annotations

import heapq
import multiprocessing
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import orjson

from streams.audit.replay import Replayed, Replayer
from streams.audit.resolve_file import LineError
from streams.core.policy import CompiledPolicy
from streams.wire.codec import MAX_CLAIM_BYTES
from streams.wire.topics import partition_for

#: Width of each number in a tag: tags compare as text in the order of their numbers.
_WIDTH: Final = 12
#: A tag's phase: made on an input line, or when the end of the input closed a window.
_ON_LINE, _AT_END = b"0", b"1"


@dataclass(frozen=True, slots=True)
class Part:
    """What one process made of its partitions: its tagged decisions and its refusals."""

    output: str
    errors: list[LineError]
    records: int


def home_of(raw: bytes, partitions: int) -> int:
    """The home partition of a line's fact, or 0 when the line names no fact."""
    if len(raw) > MAX_CLAIM_BYTES:
        return 0
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return 0
    if not isinstance(data, dict):
        return 0
    subject, field = data.get("subject"), data.get("field")
    if not isinstance(subject, str) or not isinstance(field, str):
        return 0
    try:
        key = f"{subject}|{field}".encode()
    except UnicodeEncodeError:  # orjson reads no lone surrogate; kept for safety
        return 0
    return partition_for(key, partitions)


def jobs_for(jobs: int, partitions: int) -> int:
    """The processes worth forking: no more than there are partitions to share."""
    return max(1, min(jobs, partitions))


def _tag(phase: bytes, first: int, second: int) -> bytes:
    return b"%s%0*d%0*d" % (phase, _WIDTH, first, _WIDTH, second)


#: What the forked processes inherit (set by `replay_shared` just before it forks).
_JOB: dict[str, Any] = {}


def replay_shared(
    path: Path,
    policy: CompiledPolicy,
    partitions: int,
    jobs: int,
    decided: Callable[[bytes], None],
) -> Replayed:
    """Replay the file `path` in `jobs` processes; each decision's JSON to `decided`, in order.

    Returns the refused lines (sorted by line) and the records read; no decisions are held.
    """
    with tempfile.TemporaryDirectory(prefix="claimwatch-replay-") as work:
        _JOB.update(path=str(path), policy=policy, partitions=partitions, jobs=jobs, work=work)
        try:
            context = multiprocessing.get_context("fork")
            with context.Pool(jobs) as pool:
                parts = pool.map(_part, range(jobs))
        finally:
            _JOB.clear()
        for body in _merged(parts):
            decided(body)
    result = Replayed(records=sum(part.records for part in parts))
    result.errors = sorted((e for p in parts for e in p.errors), key=lambda e: e.line)
    return result


class _TaggedSink:
    """Writes each decision after its tag: the place the one-process replay makes it."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.phase, self.first, self.seq = _ON_LINE, 0, 0

    def at(self, phase: bytes, first: int) -> None:
        """The decisions that follow are made on this line (or at this partition's end)."""
        self.phase, self.first, self.seq = phase, first, 0

    def write(self, _record: dict[str, Any], body: bytes) -> None:
        self.sink.write(_tag(self.phase, self.first, self.seq) + body + b"\n")
        self.seq += 1


def _part(index: int) -> Part:
    """One process's partitions replayed; its decisions written, tagged, to a file."""
    jobs: int = _JOB["jobs"]
    partitions: int = _JOB["partitions"]
    name: str = _JOB["path"]
    replayer = Replayer(_JOB["policy"], partitions, keep=False)
    output = str(Path(_JOB["work"]) / f"part-{index}.jsonl")
    with open(output, "wb") as sink, open(name, "rb") as handle:
        tagged = _TaggedSink(sink)
        replayer.on_decision = tagged.write
        for number, raw in enumerate(handle, start=1):
            if home_of(raw, partitions) % jobs == index:
                tagged.at(_ON_LINE, number)
                replayer.feed_line(raw, name, number)
        for partition in replayer.runtime.held():
            tagged.at(_AT_END, partition)
            replayer.finish_partition(partition)
    result = replayer.result
    return Part(output, result.errors, result.records)


def _merged(parts: list[Part]) -> Iterator[bytes]:
    """Every part's decisions in tag order, tags cut off (each part is in tag order)."""
    handles: list[IO[bytes]] = [open(part.output, "rb") for part in parts]  # noqa: SIM115
    try:
        cut = 1 + 2 * _WIDTH
        for line in heapq.merge(*handles):
            yield line[cut:-1]
    finally:
        for handle in handles:
            handle.close()
