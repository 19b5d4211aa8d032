"""`claimwatch compare-text`: JSON lines of passage pairs in, one verdict per line out, in order."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Annotated

import orjson
import typer

from claimwatch.cli.common import open_input
from claimwatch.core.text import compare
from claimwatch.wire.codec import dumps_line


@dataclass(frozen=True, slots=True)
class PairError:
    """An input line that is not a pair of passages."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


def _pair(raw: bytes) -> tuple[str, str] | str:
    """The (left, right) passages of one line, or the reason it is not a pair."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    if not isinstance(data, dict):
        return 'expected an object {"left": "...", "right": "..."}'
    left, right = data.get("left"), data.get("right")
    for key, value in (("left", left), ("right", right)):
        if not isinstance(value, str):
            shown = "missing" if value is None else f"expected a string, got {type(value).__name__}"
            return f"{key}: {shown}"
    return str(left), str(right)


def compare_stream(lines: Iterable[bytes], out: IO[bytes], source: str) -> list[PairError]:
    """Write one verdict per non-blank input line, in order; a bad line gets `{"error": ...}`.

    Returns the bad lines, so the caller can report them and exit non-zero.
    """
    errors: list[PairError] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        pair = _pair(raw)
        if isinstance(pair, str):
            error = PairError(source, number, pair)
            errors.append(error)
            out.write(dumps_line({"error": str(error)}))
            continue
        out.write(dumps_line(compare(*pair).as_json()))
    out.flush()
    return errors


def compare_text(
    file: Annotated[
        str, typer.Argument(help='JSON lines {"left": ..., "right": ...}; - or nothing for stdin')
    ] = "-",
) -> None:
    """Compare text passages: one verdict (conflict, rule, detail, duplicate) per input line."""
    with open_input(file) as (handle, name):
        errors = compare_stream(handle, sys.stdout.buffer, name)
    for error in errors:
        typer.echo(f"claimwatch: {error}", err=True)
    if errors:
        raise typer.Exit(1)
