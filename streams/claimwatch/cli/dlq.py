"""`claimwatch dlq`: tail the dead-letter topic, with each record's origin and reason.

One line per record: `topic[partition]@offset`, the key, the worker's reason, the start of
the value (tab-separated; `--json` prints JSON lines). A record without the worker's
headers is printed all the same, saying so.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from aiokafka.errors import KafkaError

from claimwatch.cli.common import BootstrapOption, PrefixOption, fail, moment
from claimwatch.cli.topics import prefix_or_env
from claimwatch.client.dead_letters import DeadLetter
from claimwatch.client.decisions import DecisionTail, TopicMissing
from claimwatch.wire.codec import dumps
from claimwatch.wire.kafka import env_bootstrap
from claimwatch.wire.topics import BrokerUnavailable, TopicNames


async def _tail(tail: DecisionTail, follow: bool, json_lines: bool) -> int:
    """Print the records (to the end, or forever with `follow`); how many were printed."""
    printed = 0
    async with tail:
        batches = tail.records(follow=True, idle_timeout_s=0) if follow else tail.to_end()
        async for batch in batches:
            for letter in map(DeadLetter.of, batch):
                typer.echo(dumps(letter.summary()).decode() if json_lines else letter.line())
            printed += len(batch)
    return printed


def dlq(
    bootstrap: BootstrapOption = None,
    topic_prefix: PrefixOption = None,
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="start at the oldest record, not the end")
    ] = False,
    since: Annotated[
        str | None, typer.Option(help="start at records written at or after (RFC 3339)")
    ] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep waiting for more")] = False,
    json_lines: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False,
) -> None:
    """Print the dead-letter topic's records: origin, key, reason, the start of the value.

    Without --follow, prints what the topic holds (from the start with --from-beginning,
    or from --since) and stops at its end; exit 1 when no worker made the topic.
    """
    if from_beginning and since is not None:
        fail("give --from-beginning or --since, not both", 2)
    since_us = moment("--since", since)
    if not (follow or from_beginning or since is not None):
        fail("nothing to show: give --from-beginning, --since TIME or --follow", 2)
    topic = TopicNames(prefix_or_env(topic_prefix)).dlq
    tail = DecisionTail(
        bootstrap or env_bootstrap(),
        topic,
        from_beginning=from_beginning,
        since_ms=None if since_us is None else since_us // 1000,
    )
    try:
        printed = asyncio.run(_tail(tail, follow, json_lines))
    except (TopicMissing, KafkaError, BrokerUnavailable) as exc:
        fail(str(exc) or type(exc).__name__, 1)
    except KeyboardInterrupt:  # the way to end --follow
        raise typer.Exit(0) from None
    if not json_lines:
        typer.echo(f"{printed} dead letter(s) in {topic}", err=True)
