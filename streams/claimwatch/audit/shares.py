"""What resolve and replay share to spread a large file over processes (`--jobs`).

When to share a file out, how many processes to fork, the fact a line names (each side
hashes it its own way), and the fork itself: the processes inherit what the parent put in
JOB (the compiled policy is not sent), each runs `part(index)` and writes its share into
the work directory, which lives until the parent has merged the parts.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

import orjson

from claimwatch.wire.codec import MAX_CLAIM_BYTES

#: Files smaller than this are handled in one process (forking costs more than it saves).
PARALLEL_FROM_BYTES: Final = 4 << 20
#: What the forked processes inherit (set by `forked` just before it forks): `work` is the
#: directory the parts write into, the rest is what the caller gave.
JOB: dict[str, Any] = {}

T = TypeVar("T")


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


def named_fact(raw: bytes) -> tuple[str, str, Any] | None:
    """The subject and field a line names, and its parsed JSON, else None.

    None for a line too large to be a claim, not JSON, not an object, or without a string
    subject and field: such a line belongs to the first process.
    """
    if len(raw) > MAX_CLAIM_BYTES:
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    subject, field = data.get("subject"), data.get("field")
    if not isinstance(subject, str) or not isinstance(field, str):
        return None
    return subject, field, data


#: What a forked process keeps until it is stopped (see `kept_to_the_end`).
_KEPT: list[Any] = []


def kept_to_the_end(value: Any) -> None:
    """Keep `value` alive until this forked process is stopped, instead of freeing it.

    A part's batch or replayer holds every claim it read; freed object by object when the
    part returns, it would delay the part's result, and the pool stops the process right
    after the result anyway (its memory goes back whole).
    """
    _KEPT.append(value)


@contextlib.contextmanager
def forked(
    part: Callable[[int], T], processes: int, prefix: str, /, **job: Any
) -> Iterator[list[T]]:
    """`part(0) ... part(processes - 1)` forked; their results, the work dir still there."""
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        JOB.update(job, work=work)
        try:
            with multiprocessing.get_context("fork").Pool(processes) as pool:
                parts = pool.map(part, range(processes))
        finally:
            JOB.clear()
        yield parts
