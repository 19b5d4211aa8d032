"""Every command that names a topic takes `--topic-prefix`; a topic's short name takes it too."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from claimwatch.cli.main import COMMANDS, build
from claimwatch.cli.topics import topic_named

#: commands that read or write no topic (files, a worker's HTTP pages)
NO_TOPIC = {"resolve", "compare-text", "argue", "merge", "ask"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_naming_a_topic_takes_the_prefix(name: str) -> None:
    """A new command that names topics must say so here, and take `--topic-prefix`."""
    group: Any = typer.main.get_command(build([name]))  # a group: `claimwatch <name>`
    options = {o for p in group.commands[name].params for o in p.opts}
    assert (name not in NO_TOPIC) == ("--topic-prefix" in options)


@pytest.mark.parametrize(
    ("name", "prefix", "expected"),
    [
        ("decisions", "p.", "p.decisions"),
        ("claims.dlq", "p.", "p.claims.dlq"),
        ("decisions", "", "decisions"),
        ("p.decisions", "p.", "p.decisions"),
        ("my-replayed", "p.", "my-replayed"),
        ("claimwatch.decisions", "p.", "claimwatch.decisions"),
    ],
)
def test_a_deployment_topics_short_name_takes_the_prefix(
    name: str, prefix: str, expected: str
) -> None:
    assert expected == topic_named(name, prefix)
