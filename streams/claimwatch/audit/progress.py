"""A progress bar for a long replay, on a terminal only (stderr)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


def progress(total: int, what: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    """`(advance, stop)` of a rich progress bar on a terminal; both do nothing when piped."""
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
