"""`claimwatch resolve` on several cores: a file's facts shared out among processes by key.

Each process reads the whole file, parsing every line once, but decides only the lines
whose fact (subject, field) hashes to it; a line that names no fact (not JSON, no object,
no string subject or field, too large) belongs to the first. So every line is read for
its claim by exactly one process, as the one-process path reads it, and a fact's claims
all meet in one process. Each writes its decisions, sorted by fact, to a file of its own;
the parent merges them by fact and the refused lines by line: the output is byte for byte
the one-process output. Processes are forked (the compiled policy is inherited, not sent).
"""

from __future__ import annotations

import contextlib
import heapq
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from streams.audit.resolve_file import LineError, read_claims, resolve_keyed
from streams.audit.shares import JOB, forked, kept_to_the_end, named_fact
from streams.core.claim import Claim
from streams.core.policy import CompiledPolicy
from streams.wire.codec import DecodeError, claim_of, keeps_limits


@dataclass(frozen=True, slots=True)
class Part:
    """What one process made of its share: its output file, its facts in order, its errors."""

    output: str
    keys: list[tuple[str, str]]
    errors: list[LineError]


def owner_of(raw: bytes, parts: int) -> int:
    """Which of `parts` processes reads a line: by its fact's hash, or 0 if it names none."""
    return _owner(named_fact(raw), parts)


def _owner(named: tuple[bytes, Any] | None, parts: int) -> int:
    return 0 if named is None else zlib.crc32(named[0]) % parts


def _own_lines(handle: IO[bytes], index: int, parts: int) -> Iterator[bytes | Claim]:
    """Every line of a file for process `index`: its own claims decoded once, else b"".

    A line it owns that does not decode, or that names no fact, is handed on as bytes,
    for `read_claims` to report as the one-process path does.
    """
    for raw in handle:
        named = named_fact(raw)
        if _owner(named, parts) != index:
            yield b""
        elif named is None:
            yield raw
        else:
            try:
                yield claim_of(named[1], share=False, within_limits=keeps_limits(raw))
            except DecodeError:
                yield raw


def resolve_shared(
    path: str, name: str, policy: CompiledPolicy, now_us: int, jobs: int, out: IO[bytes]
) -> list[LineError]:
    """Resolve `path` in `jobs` processes; write the decisions to `out`, return the errors."""
    job = {"path": path, "name": name, "policy": policy, "now_us": now_us, "jobs": jobs}
    with forked(_part, jobs, "claimwatch-resolve-", **job) as parts:
        for line in _merged(parts):
            out.write(line)
    errors = [e for part in parts for e in part.errors]
    errors.sort(key=lambda e: (e.source, e.line))
    return errors


def _part(index: int) -> Part:
    """One process's share: its lines read and decided, its decisions written to a file."""
    jobs: int = JOB["jobs"]
    with open(JOB["path"], "rb") as handle:
        batch = read_claims(_own_lines(handle, index, jobs), JOB["name"], JOB["policy"])
    output = str(Path(JOB["work"]) / f"part-{index}.jsonl")
    keys: list[tuple[str, str]] = []
    with open(output, "wb") as sink:
        for key, line in resolve_keyed(batch, JOB["policy"], JOB["now_us"]):
            sink.write(line)
            keys.append(key)
    kept_to_the_end(batch)
    return Part(output, keys, batch.errors)


def _merged(parts: Iterable[Part]) -> Iterator[bytes]:
    """The parts' lines in fact order (each part is sorted, and no fact is in two)."""
    with contextlib.ExitStack() as stack:
        streams = [
            zip(part.keys, stack.enter_context(open(part.output, "rb")), strict=True)
            for part in parts
        ]
        for _key, line in heapq.merge(*streams, key=lambda kv: kv[0]):
            yield line
