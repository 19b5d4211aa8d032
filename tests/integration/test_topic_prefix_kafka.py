"""`--topic-prefix` and CLAIMWATCH_TOPIC_PREFIX reach every topic a command names.

Each command runs against a prefix no deployment uses on the broker: its answer must name
the topic under that prefix (and no other), however the prefix was given.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.support.cli import run_cli
from tests.support.kafka import REPO, unique

pytestmark = pytest.mark.kafka

POLICY = str(REPO / "examples" / "policy.yaml")
CLAIMS = str(REPO / "examples" / "claims.jsonl")
CLAIM = (
    b'{"claim_id":"a","subject":"s","field":"f","source":"x",'
    b'"observed_at":"2026-01-01T00:00:00Z","status":"ok","value":1}\n'
)

#: (command line, stdin, the topic its answer names under the prefix)
COMMANDS = [
    (("publish", "-"), CLAIM, "claims"),
    (("decisions",), b"", "decisions"),
    (("dlq", "--from-beginning"), b"", "claims.dlq"),
    (("explain", "dec_x", "--from", "decisions"), b"", "decisions"),
    (("replay", "-p", POLICY, "--from-beginning"), b"", "claims"),
    (("replay", "-p", POLICY, "--input", CLAIMS, "--diff-against", "decisions"), b"", "decisions"),
    (("simulate", "--live", "--scenario", "demo", "--duration", "2s"), b"", "claims"),
]


@pytest.mark.parametrize("given", ["flag", "environment"])
@pytest.mark.parametrize(
    ("args", "stdin", "topic"),
    COMMANDS,
    ids=lambda a: " ".join(a)[:40] if isinstance(a, tuple) else None,
)
async def test_the_prefix_reaches_every_topic_a_command_names(
    kafka_bootstrap: str, given: str, args: tuple[str, ...], stdin: bytes, topic: str
) -> None:
    prefix = unique("cwprefix") + "."
    extra = ("--topic-prefix", prefix) if given == "flag" else ()
    env = {"CLAIMWATCH_BOOTSTRAP": kafka_bootstrap}
    if given == "environment":
        env["CLAIMWATCH_TOPIC_PREFIX"] = prefix
    done = await asyncio.to_thread(run_cli, *args, *extra, stdin=stdin, env=env)
    said = done.stderr.decode()
    assert (1, True) == (done.returncode, f"topic {prefix}{topic} does not exist" in said), said
    assert "Traceback" not in said
