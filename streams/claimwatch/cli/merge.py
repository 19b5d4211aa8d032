"""`claimwatch merge BASE OURS THEIRS`: three-way merge of text files to stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from claimwatch.core.merge import STYLES, Style, merge


def _read(path: Path) -> str:
    """The file's text (UTF-8, line endings untouched); exit 2 naming the file if unreadable."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 (byte {exc.start})"
    typer.echo(f"claimwatch: {path}: cannot read: {reason}", err=True)
    raise typer.Exit(2)


def merge_files(
    base: Annotated[Path, typer.Argument(metavar="BASE", help="the common ancestor")],
    ours: Annotated[Path, typer.Argument(metavar="OURS", help="our edit of BASE")],
    theirs: Annotated[Path, typer.Argument(metavar="THEIRS", help="their edit of BASE")],
    style: Annotated[
        str, typer.Option(help="conflict markers: merge, or diff3 (also shows the base lines)")
    ] = "merge",
) -> None:
    """Three-way merge to stdout: exit 0 clean, 1 if conflict markers remain, 2 bad usage.

    Edits of different lines merge, adjacent ones too (git reports a conflict there).
    """
    if style not in STYLES:
        typer.echo(f"claimwatch: --style: {style!r} is not one of {', '.join(STYLES)}", err=True)
        raise typer.Exit(2)
    chosen: Style = "diff3" if style == "diff3" else "merge"
    base_text, ours_text, theirs_text = (_read(path) for path in (base, ours, theirs))
    result = merge(base_text, ours_text, theirs_text, style=chosen)
    sys.stdout.buffer.write(result.text.encode("utf-8"))
    sys.stdout.buffer.flush()
    if not result.clean:
        typer.echo(f"claimwatch: {result.conflicts} conflict(s) left in the output", err=True)
        raise typer.Exit(1)
