"""The documented alternative store, `--store memory://`: it decides, and restores on restart."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta

import pytest
from claimwatch.client.publisher import Publisher

from tests.support.claims import envelope
from tests.support.kafka import REPO, Workers, decision_naming, rfc3339, wait_for_ticks

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"


async def test_the_memory_store_decides_and_restores_its_facts_after_a_restart(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """A worker on memory:// decides a claim; restarted, it rebuilds the fact from the changelog."""
    worker = await workers.launch(EXAMPLE_POLICY, store="memory://")
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    at = rfc3339(datetime.now(UTC) - timedelta(seconds=1))
    fact = {"subject": "invoice:mem-1", "observed_at": at}
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish(envelope("m-1", "billing-api", "paid", **fact))
    before = await decision_naming(kafka_bootstrap, worker.names.decisions, "m-1")

    await worker.restart(signal.SIGTERM)
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish(envelope("m-2", "reporting-replica", "overdue", **fact))
    after = await decision_naming(kafka_bootstrap, worker.names.decisions, "m-2")

    assert ("resolved", "paid") == (before["outcome"], before["value"])
    assert ("resolved", "paid", ["m-1", "m-2"]) == (
        after["outcome"],
        after["value"],
        sorted(c["claim_id"] for c in after["claims"]),
    )
