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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from claimwatch.audit.resolve_file import LineError, read_numbered, resolve_keyed
from claimwatch.audit.shares import JOB, forked, kept_to_the_end, named_fact
from claimwatch.core.claim import Claim
from claimwatch.core.policy import CompiledPolicy
from claimwatch.wire.codec import DecodeError, claim_of, keeps_limits


@dataclass(frozen=True, slots=True)
class Part:
    """What one process made of its share: its output file (lines after their sort keys)."""

    output: str
    errors: list[LineError]


#: Ends a line's sort key in a part's file. A fact's subject and field hold no control
#: characters (they are refused), so neither this nor the 0x00 between them occurs in a
#: key: the key bytes compare as the (subject, field) pairs do (UTF-8 keeps the order of
#: code points), and a part's file merges as plain lines.
_KEY_END: Final = b"\x01"


def owner_of(raw: bytes, parts: int) -> int:
    """Which of `parts` processes reads a line: by its fact's hash, or 0 if it names none."""
    return _owner(named_fact(raw), parts)


def _owner(named: tuple[str, str, Any] | None, parts: int) -> int:
    # Python's string hash: forked processes share its seed, and names hash once (cached)
    return 0 if named is None else hash((named[0], named[1])) % parts


def _own_lines(handle: IO[bytes], index: int, parts: int) -> Iterator[tuple[int, bytes | Claim]]:
    """The lines of a file that process `index` owns, numbered: its claims decoded once.

    A line it owns that does not decode, or that names no fact, is handed on as bytes,
    for `read_numbered` to report as the one-process path does.
    """
    for number, raw in enumerate(handle, start=1):
        named = named_fact(raw)
        if _owner(named, parts) != index:
            continue
        if named is None:
            yield number, raw
            continue
        try:
            yield number, claim_of(named[2], share=False, within_limits=keeps_limits(raw))
        except DecodeError:
            yield number, raw


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
        batch = read_numbered(_own_lines(handle, index, jobs), JOB["name"], JOB["policy"])
    output = str(Path(JOB["work"]) / f"part-{index}.jsonl")
    with open(output, "wb") as sink:
        for (subject, field), line in resolve_keyed(batch, JOB["policy"], JOB["now_us"]):
            sink.write(sort_key(subject, field) + line)
    kept_to_the_end(batch)
    return Part(output, batch.errors)


def sort_key(subject: str, field: str) -> bytes:
    """The bytes a decision's line is sorted by in a part's file (see `_KEY_END`)."""
    return b"%s\x00%s%s" % (
        subject.encode("utf-8", "surrogatepass"),
        field.encode("utf-8", "surrogatepass"),
        _KEY_END,
    )


def _merged(parts: Iterable[Part]) -> Iterator[bytes]:
    """The parts' lines in fact order, keys cut off (each part is sorted, no fact in two)."""
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(part.output, "rb")) for part in parts]
        for line in heapq.merge(*handles):
            yield line[line.index(_KEY_END) + 1 :]
