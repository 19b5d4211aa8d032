"""Deployments keep to themselves on one broker: own consumer groups, no auto-created topics."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from claimwatch.client.docs_client import DocsClient
from claimwatch.client.publisher import Publisher
from claimwatch.wire.topics import MissingTopic, TopicNames
from claimwatch.worker.settings import default_app_id

from tests.support.kafka import CLAIMWATCH, REPO, WorkerProcess, Workers, unique
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLES = REPO / "examples" / "claims.jsonl"


@dataclasses.dataclass(slots=True)
class DefaultAppWorker(WorkerProcess):
    """A worker started as the README starts it: no --app-id (the prefix's default)."""

    def command(self) -> list[str]:
        argv = WorkerProcess.command(self)
        at = argv.index("--app-id")
        return argv[:at] + argv[at + 2 :]


async def _members(bootstrap: str, group: str) -> list[str]:
    """The client ids of a consumer group's members."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    (described,) = response.to_object()["groups"]
    return [m["client_id"] for m in described["members"]]


async def test_workers_of_two_prefixes_join_two_consumer_groups(workers: Workers) -> None:
    """Without --app-id, each prefix's worker is alone in its own group (no shared rebalance)."""
    started = []
    for _ in range(2):
        model = workers.new(EXAMPLE_POLICY, prefix=unique("cwdeploy") + ".")
        worker = DefaultAppWorker(
            **{f.name: getattr(model, f.name) for f in dataclasses.fields(model)}
        )
        worker.app_id = default_app_id(worker.prefix)  # what the teardown deletes
        workers.started[-1] = worker
        started.append(await worker.launch())

    groups = [default_app_id(w.prefix) for w in started]
    members = [await _members(w.bootstrap, g) for w, g in zip(started, groups, strict=True)]
    assert 2 == len(set(groups))
    assert [1, 1] == [len(m) for m in members]


async def _topics(bootstrap: str, prefix: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return [t for t in await admin.list_topics() if t.startswith(prefix)]
    finally:
        await admin.close()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAIMWATCH_TOPIC_PREFIX"}
    return subprocess.run(
        [str(CLAIMWATCH), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


async def test_a_client_with_a_prefix_nobody_runs_is_refused_and_creates_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Publisher, DocsClient, `publish` and `simulate --live`: the error names prefix and topic.

    Issue 40 item 8: a client that forgot the prefix made the broker auto-create
    `claimwatch.claims` (one partition, CreateTime) for a later worker to adopt.
    """
    prefix = unique("cwnobody") + "."
    names = TopicNames(prefix)
    with pytest.raises(MissingTopic) as publisher:
        async with Publisher(kafka_bootstrap, prefix) as pub:
            await pub.publish({})
    with pytest.raises(MissingTopic) as docs:
        async with DocsClient(kafka_bootstrap, prefix):
            pass
    lines = tmp_path / "claims.jsonl"
    lines.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0] + "\n")
    cli = await asyncio.to_thread(
        _run, "publish", "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix, str(lines)
    )
    simulated = await asyncio.to_thread(
        _run, "simulate", "--scenario", "clean", "--live", "--speed", "1000",
        "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix,
    )  # fmt: skip

    assert [] == await _topics(kafka_bootstrap, prefix)
    for message in (str(publisher.value), cli.stderr, simulated.stderr):
        assert f"topic {names.claims} does not exist" in message
        assert f"topic prefix {prefix!r}" in message
    assert f"topic {names.publish} does not exist" in str(docs.value)
    assert (1, 1) == (cli.returncode, simulated.returncode)
    assert "--create-topics" in cli.stderr
    assert "Traceback" not in cli.stderr + simulated.stderr
