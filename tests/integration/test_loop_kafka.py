"""The worker's event loops on the real broker: uvloop as shipped, asyncio when asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from claimwatch.client.publisher import Publisher

from tests.support.claims import envelope
from tests.support.kafka import REPO, Workers, decision_naming, rfc3339

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"


@pytest.mark.parametrize(
    ("extra_args", "expected_loop"), [((), "uvloop"), (("--loop", "asyncio"), "asyncio")]
)
async def test_the_worker_decides_on_its_event_loop(
    workers: Workers, kafka_bootstrap: str, extra_args: tuple[str, ...], expected_loop: str
) -> None:
    """/health names the loop the worker runs on, and a claim published to it is decided."""
    worker = await workers.launch(EXAMPLE_POLICY, extra_args=extra_args)
    status, body = await worker.get("/health")
    at = rfc3339(datetime.now(UTC) - timedelta(seconds=1))
    claim = envelope("loop-1", "billing-api", "paid", subject="invoice:loop-1", observed_at=at)
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish(claim)
    decision = await decision_naming(kafka_bootstrap, worker.names.decisions, "loop-1")
    assert (200, expected_loop, "resolved") == (
        status,
        orjson.loads(body)["loop"],
        decision["outcome"],
    )
