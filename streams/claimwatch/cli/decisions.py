"""`claimwatch decisions`: tail the decisions topic, dropping repeated decision ids."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import typer
from aiokafka.errors import KafkaError

from claimwatch.cli.common import (
    fail,
    moment,
)
from claimwatch.client.decisions import OUTCOMES, Filters, Printer, TopicMissing, run_decisions
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import BrokerUnavailable, TopicNames


def decisions(
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="start at the oldest decision, not the end")
    ] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep waiting for more")] = False,
    idle_timeout: Annotated[
        float, typer.Option(help="without --follow, stop after this many seconds of silence")
    ] = 5.0,
    field: Annotated[str | None, typer.Option(help="only this field")] = None,
    outcome: Annotated[
        str | None, typer.Option(help="only resolved, conflict, insufficient or rejected")
    ] = None,
    fact: Annotated[str | None, typer.Option(help="only this fact: SUBJECT|FIELD")] = None,
    since: Annotated[str | None, typer.Option(help="decided_at at or after (RFC 3339)")] = None,
    until: Annotated[str | None, typer.Option(help="decided_at at or before (RFC 3339)")] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False,
) -> None:
    """Tail the decisions topic (no consumer group), dropping repeated decision ids."""
    if outcome is not None and outcome not in OUTCOMES:
        fail(f"--outcome: {outcome!r} is not one of {', '.join(OUTCOMES)}", 2)
    if fact is not None and "|" not in fact:
        fail(f"--fact: {fact!r} is not SUBJECT|FIELD", 2)
    if idle_timeout < 0:
        fail("--idle-timeout: must not be negative", 2)
    filters = Filters(
        field=field,
        outcome=outcome,
        fact=fact,
        since_us=moment("--since", since),
        until_us=moment("--until", until),
    )
    mode = "json" if json_lines else "table" if sys.stdout.isatty() else "plain"
    printer = Printer(mode)
    prefix = topic_prefix if topic_prefix is not None else env_prefix()
    try:
        tail = asyncio.run(
            run_decisions(
                bootstrap=bootstrap or env_bootstrap(),
                topic=TopicNames(prefix).decisions,
                filters=filters,
                from_beginning=from_beginning,
                follow=follow,
                idle_timeout_s=idle_timeout,
                printer=printer,
            )
        )
    except (TopicMissing, KafkaError, BrokerUnavailable) as exc:
        fail(str(exc) or type(exc).__name__, 1)
    except KeyboardInterrupt:  # the way to end --follow
        raise typer.Exit(0) from None
    if mode == "table":
        repeats = f"; {tail.repeats} repeated id(s) dropped" if tail.repeats else ""
        typer.echo(f"{printer.count} decision(s){repeats}", err=True)
