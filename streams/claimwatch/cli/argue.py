"""`claimwatch argue`: the extensions of an argumentation framework."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from claimwatch.audit.argue import FORMATS, ArgueFormatError, read_framework
from claimwatch.cli.common import (
    fail,
)
from claimwatch.core.argue import Semantics, named_extensions


def argue(
    file: Annotated[str, typer.Argument(help="framework file, ICCMA 2023 or apx; - for stdin")],
    semantics: Annotated[
        str, typer.Option(help="grounded, complete, preferred or stable")
    ] = "grounded",
    fmt: Annotated[
        str | None, typer.Option("--format", help="i23 or apx (default: from the file)")
    ] = None,
) -> None:
    """Print the extensions of an argumentation framework as JSON: sorted lists of names."""
    if semantics not in {s.value for s in Semantics}:
        fail(f"--semantics: {semantics!r} is not one of {', '.join(s.value for s in Semantics)}", 2)
    if fmt is not None and fmt not in FORMATS:
        fail(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}", 2)
    name = "<stdin>" if file == "-" else file
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{name}: cannot read: {getattr(exc, 'strerror', None) or exc}", 2)
    try:
        framework = read_framework(text, name, fmt)
    except ArgueFormatError as exc:
        fail(str(exc), 2)
    try:
        found = named_extensions(framework, semantics)
    except (MemoryError, RecursionError) as exc:
        fail(f"{name}: {semantics} extensions: {type(exc).__name__}", 1)
    typer.echo(json.dumps(found, ensure_ascii=False))
