"""A file replay on several cores: the partitions shared out among forked processes.

A file replay runs one partition clock per partition, and nothing in one partition reads
another's state, so each partition is replayed whole by one process. Every process reads
the whole file and feeds the lines whose fact's home partition it owns (partition mod the
processes); a line that names no fact goes to the first. So each line is fed to exactly one
replayer, as the one-process replay feeds it (a claim it decodes while finding its home is
handed on decoded, not parsed again). Each process writes its decisions to a file
of its own, every one tagged with where the one-process replay makes it: the input line it
was made on and its place among that line's decisions, or, for the windows closed at the
end of the input, its partition and its place there. The parent merges the files by tag,
so decisions reach the outputs in the one-process order and the output is byte for byte
the same. Processes are forked (the compiled policy is inherited, not sent).
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from claimwatch.audit.replay import Replayed, Replayer
from claimwatch.audit.resolve_file import LineError
from claimwatch.audit.shares import JOB, forked, kept_to_the_end, named_fact
from claimwatch.core.claim import Claim
from claimwatch.core.policy import CompiledPolicy
from claimwatch.wire.codec import DecodeError, claim_of, keeps_limits
from claimwatch.wire.topics import partition_for

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
    return _home(named_fact(raw), partitions)


def _home(named: tuple[str, str, Any] | None, partitions: int) -> int:
    if named is None:
        return 0
    return partition_for(f"{named[0]}|{named[1]}".encode("utf-8", "surrogatepass"), partitions)


def jobs_for(jobs: int, partitions: int) -> int:
    """The processes worth forking: no more than there are partitions to share."""
    return max(1, min(jobs, partitions))


def _tag(phase: bytes, first: int, second: int) -> bytes:
    return b"%s%0*d%0*d" % (phase, _WIDTH, first, _WIDTH, second)


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
    job = {"path": str(path), "policy": policy, "partitions": partitions, "jobs": jobs}
    with forked(_part, jobs, "claimwatch-replay-", **job) as parts:
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
    jobs: int = JOB["jobs"]
    partitions: int = JOB["partitions"]
    name: str = JOB["path"]
    replayer = Replayer(JOB["policy"], partitions, keep=False)
    output = str(Path(JOB["work"]) / f"part-{index}.jsonl")
    with open(output, "wb") as sink, open(name, "rb") as handle:
        tagged = _TaggedSink(sink)
        replayer.on_decision = tagged.write
        for number, raw in enumerate(handle, start=1):
            named = named_fact(raw)
            home = _home(named, partitions)
            if home % jobs == index:
                tagged.at(_ON_LINE, number)
                replayer.feed_line(raw, name, number, _decoded(raw, named, home))
        for partition in replayer.runtime.held():
            tagged.at(_AT_END, partition)
            replayer.finish_partition(partition)
    result = replayer.result
    kept_to_the_end(replayer)
    return Part(output, result.errors, result.records)


def _decoded(raw: bytes, named: tuple[str, str, Any] | None, home: int) -> tuple[Claim, int] | None:
    """The line's claim and home, from the JSON already parsed.

    None when the line names no fact or is no claim: the replayer then decodes it itself
    and reports why.
    """
    if named is None:
        return None
    try:
        return claim_of(named[2], within_limits=keeps_limits(raw)), home
    except DecodeError:
        return None


def _merged(parts: list[Part]) -> Iterator[bytes]:
    """Every part's decisions in tag order, tags cut off (each part is in tag order)."""
    cut = 1 + 2 * _WIDTH
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(part.output, "rb")) for part in parts]
        for line in heapq.merge(*handles):
            yield line[cut:-1]
