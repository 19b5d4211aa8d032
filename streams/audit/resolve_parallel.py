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

import heapq
import multiprocessing
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import orjson

from streams.audit.resolve_file import LineError, read_claims, resolve_keyed
from streams.core.claim import Claim
from streams.core.policy import CompiledPolicy
from streams.wire.codec import MAX_CLAIM_BYTES, DecodeError, claim_of, keeps_limits

#: Files smaller than this are resolved in one process (forking costs more than it saves).
PARALLEL_FROM_BYTES: Final = 4 << 20


@dataclass(frozen=True, slots=True)
class Part:
    """What one process made of its share: its output file, its facts in order, its errors."""

    output: str
    keys: list[tuple[str, str]]
    errors: list[LineError]


def owner_of(raw: bytes, parts: int) -> int:
    """Which of `parts` processes reads a line: by its fact's hash, or 0 if it names none."""
    return _owned(raw, parts)[0]


def _owned(raw: bytes, parts: int) -> tuple[int, Any]:
    """The owner of a line, and its parsed envelope when it names a fact (else None)."""
    if len(raw) > MAX_CLAIM_BYTES:
        return 0, None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return 0, None
    if not isinstance(data, dict):
        return 0, None
    subject, field = data.get("subject"), data.get("field")
    if not isinstance(subject, str) or not isinstance(field, str):
        return 0, None
    key = f"{subject}\x1f{field}".encode("utf-8", "surrogatepass")
    return zlib.crc32(key) % parts, data


def _own_lines(handle: IO[bytes], index: int, parts: int) -> Iterator[bytes | Claim]:
    """Every line of a file for process `index`: its own claims decoded once, else b"".

    A line it owns that does not decode, or that names no fact, is handed on as bytes,
    for `read_claims` to report as the one-process path does.
    """
    for raw in handle:
        owner, data = _owned(raw, parts)
        if owner != index:
            yield b""
        elif data is None:
            yield raw
        else:
            try:
                yield claim_of(data, share=False, within_limits=keeps_limits(raw))
            except DecodeError:
                yield raw


def default_jobs() -> int:
    """The processes `--jobs` defaults to: the cores this process may run on (at most 4)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def wants_parallel(path: str, jobs: int) -> bool:
    """Whether a file is worth sharing out: a regular file, big enough, more than one job."""
    if jobs <= 1 or path == "-":
        return False
    try:
        return os.stat(path).st_size >= PARALLEL_FROM_BYTES
    except OSError:
        return False


#: What the forked processes inherit (set by `resolve_shared` just before it forks).
_JOB: dict[str, Any] = {}


def resolve_shared(
    path: str, name: str, policy: CompiledPolicy, now_us: int, jobs: int, out: IO[bytes]
) -> list[LineError]:
    """Resolve `path` in `jobs` processes; write the decisions to `out`, return the errors."""
    with tempfile.TemporaryDirectory(prefix="claimwatch-resolve-") as work:
        _JOB.update(path=path, name=name, policy=policy, now_us=now_us, jobs=jobs, work=work)
        try:
            context = multiprocessing.get_context("fork")
            with context.Pool(jobs) as pool:
                parts = pool.map(_part, range(jobs))
        finally:
            _JOB.clear()
        for line in _merged(parts):
            out.write(line)
        errors = [e for part in parts for e in part.errors]
    errors.sort(key=lambda e: (e.source, e.line))
    return errors


def _part(index: int) -> Part:
    """One process's share: its lines read and decided, its decisions written to a file."""
    jobs: int = _JOB["jobs"]
    with open(_JOB["path"], "rb") as handle:
        batch = read_claims(_own_lines(handle, index, jobs), _JOB["name"], _JOB["policy"])
    output = str(Path(_JOB["work"]) / f"part-{index}.jsonl")
    keys: list[tuple[str, str]] = []
    with open(output, "wb") as sink:
        for key, line in resolve_keyed(batch, _JOB["policy"], _JOB["now_us"]):
            sink.write(line)
            keys.append(key)
    return Part(output, keys, batch.errors)


def _merged(parts: Iterable[Part]) -> Iterator[bytes]:
    """The parts' lines in fact order (each part is sorted, and no fact is in two)."""
    handles = [open(part.output, "rb") for part in parts]  # noqa: SIM115 - closed below
    try:
        streams = [
            zip(part.keys, handle, strict=True) for part, handle in zip(parts, handles, strict=True)
        ]
        for _key, line in heapq.merge(*streams, key=lambda kv: kv[0]):
            yield line
    finally:
        for handle in handles:
            handle.close()
