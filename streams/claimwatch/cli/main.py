"""The `claimwatch` command line: exit 0 ok, 2 bad usage or bad policy, 1 runtime failure.

Every command lives in its own module of this package and is registered here, by name.
A run imports only the module of the command it runs (the others pull in Kafka clients,
the worker, the simulator...: start-up time every command would pay); `--help` and
anything that names no known command register them all.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final

import typer

#: command name -> (module in this package, function)
COMMANDS: Final = {
    "resolve": ("resolve", "resolve"),
    "compare-text": ("text", "compare_text"),
    "worker": ("worker", "worker"),
    "publish": ("publish", "publish"),
    "decisions": ("decisions", "decisions"),
    "simulate": ("simulate", "simulate"),
    "argue": ("argue", "argue"),
    "replay": ("replay", "replay"),
    "explain": ("explain", "explain"),
    "merge": ("merge", "merge_files"),
    "ask": ("ask", "ask"),
    "dlq": ("dlq", "dlq"),
    "gateway": ("gateway", "gateway"),
}


def build(argv: Sequence[str] = ()) -> typer.Typer:
    """The Typer app with the command `argv` names registered (all when it names none)."""
    app = typer.Typer(
        name="claimwatch",
        help="Streaming conflict monitor for AI-agent tool results.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """Streaming conflict monitor for AI-agent tool results."""

    named = argv[0] if argv and argv[0] in COMMANDS else None
    for name, (module, function) in COMMANDS.items():
        if named is None or name == named:
            command = getattr(importlib.import_module(f"claimwatch.cli.{module}"), function)
            app.command(name)(command)
    return app


def main() -> None:
    """Console-script entry point."""
    build(sys.argv[1:])()


if __name__ == "__main__":
    main()
