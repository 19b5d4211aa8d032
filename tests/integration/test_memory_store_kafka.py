"""The documented alternative store, `--store memory://`: it decides, and restores on restart."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from streams.client.publisher import Publisher
from tests.support.claims import envelope
from tests.support.kafka import (
    REPO,
    Record,
    TopicReader,
    Workers,
    considered,
    rfc3339,
    wait_for_ticks,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"


async def _decision_naming(bootstrap: str, topic: str, claim_id: str) -> dict[str, Any]:
    """The first record of `topic` (decisions) that lists `claim_id` among its claims."""

    def naming(records: list[Record]) -> list[dict[str, Any]]:
        return [d for d in (r.json() for r in records) if claim_id in considered(d)]

    async with TopicReader(bootstrap, topic) as reader:
        records = await reader.wait_for(
            lambda read: bool(naming(read)), 45.0, f"a decision of {claim_id}"
        )
        return naming(records)[0]


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
    before = await _decision_naming(kafka_bootstrap, worker.names.decisions, "m-1")

    await worker.restart(signal.SIGTERM)
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish(envelope("m-2", "reporting-replica", "overdue", **fact))
    after = await _decision_naming(kafka_bootstrap, worker.names.decisions, "m-2")

    assert ("resolved", "paid") == (before["outcome"], before["value"])
    assert ("resolved", "paid", ["m-1", "m-2"]) == (
        after["outcome"],
        after["value"],
        sorted(c["claim_id"] for c in after["claims"]),
    )
