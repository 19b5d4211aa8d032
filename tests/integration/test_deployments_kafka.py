"""Deployments keep to themselves on one broker: own consumer groups, no auto-created topics."""

from __future__ import annotations

import dataclasses

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from streams.worker.settings import default_app_id
from tests.support.kafka import WorkerProcess, Workers, unique
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka


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
