"""The `claimwatch` command line: exit 0 ok, 2 bad usage or bad policy, 1 runtime failure.

Every command lives in its own module of this package and is registered here, by name.
"""

from __future__ import annotations

import typer

from streams.cli import (
    argue,
    decisions,
    explain,
    merge,
    publish,
    replay_command,
    resolve,
    simulate,
    text,
    worker,
)

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


app.command("resolve")(resolve.resolve)
app.command("compare-text")(text.compare_text)
app.command("worker")(worker.worker)
app.command("publish")(publish.publish)
app.command("decisions")(decisions.decisions)
app.command("simulate")(simulate.simulate)
app.command("argue")(argue.argue)
app.command("replay")(replay_command.replay)
app.command("explain")(explain.explain)
app.command("merge")(merge.merge_files)


def main() -> None:
    """Console-script entry point."""
    app()
