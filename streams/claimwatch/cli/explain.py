"""`claimwatch explain DECISION_ID`: a decision in plain language, from its record."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from claimwatch.audit.explain import explain as render
from claimwatch.audit.recorded import decision_lines, recorded_decisions
from claimwatch.cli.common import fail
from claimwatch.wire.kafka import env_prefix
from claimwatch.wire.topics import TopicNames


def explain(
    decision_id: Annotated[str, typer.Argument(help="the decision_id to explain")],
    source: Annotated[
        str | None, typer.Option("--from", help="decisions JSON-lines FILE or TOPIC")
    ] = None,
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
) -> None:
    """Render a decision in plain language from its record."""
    where = source or TopicNames(env_prefix()).decisions
    piped = source is None and not sys.stdin.isatty()
    try:
        if piped:
            records = decision_lines(sys.stdin.buffer, "<stdin>")
        else:
            records = list(recorded_decisions(where, bootstrap))
    except RuntimeError as exc:  # a line that is not a decision: FILE:LINE: reason
        fail(str(exc), 1)
    found = next((r for r in records if r.get("decision_id") == decision_id), None)
    if found is None:
        fail(f"no decision {decision_id} in {'stdin' if piped else where}", 1)
    try:
        text = render(found)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        message = f"decision {decision_id} is not a complete decision record ({reason})"
        fail(message, 1)
    typer.echo(text)
