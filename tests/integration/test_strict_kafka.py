"""Strict by default on the real broker: typos in fields and sources never come back `proceed`."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.client.publisher import Publisher

from tests.support.claims import envelope
from tests.support.kafka import (
    TopicReader,
    Workers,
    ago,
    decisions_by_fact,
    unique,
    wait_for_ticks,
    write_policy,
)
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka


async def test_a_misspelt_field_and_an_unregistered_source_are_held_back_and_counted(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Issue 40 item 7 through the worker as shipped, with the example policy.

    `paymentStatus` is decided `rejected` (reason naming the policy version and the field
    meant) and copied to the DLQ; `billing_api` alone resolves but escalates. Both are
    counted in /metrics (`unknown_field`, `unregistered_only`).
    """
    worker = await workers.launch(write_policy(tmp_path, EXAMPLE_POLICY.read_text()))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    typo, rogue = unique("invoice:typo"), unique("invoice:rogue")
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish_many(
            [
                envelope(
                    "t-1",
                    "billing-api",
                    "paid",
                    subject=typo,
                    field="paymentStatus",
                    observed_at=ago(1),
                ),
                envelope("r-1", "billing_api", "paid", subject=rogue, observed_at=ago(1)),
            ]
        )
    async with TopicReader(kafka_bootstrap, worker.names.decisions) as decisions:
        await decisions.wait_for(lambda records: len(records) >= 2, 60, "two decisions")
        await decisions.drain(idle=1.5)
    latest = {key: history[-1] for key, history in decisions_by_fact(decisions.records).items()}
    typo_decision = latest[f"{typo}|paymentStatus"]
    rogue_decision = latest[f"{rogue}|payment_status"]
    assert ("rejected", "degrade") == (typo_decision["outcome"], typo_decision["action"])
    assert (
        "field 'paymentStatus' is not in policy arbitration-2026-09 "
        "(did you mean 'payment_status'?)"
    ) == typo_decision["claims"][0]["error"]
    assert ("resolved", "paid", "escalate") == (
        rogue_decision["outcome"],
        rogue_decision["value"],
        rogue_decision["action"],
    )
    assert rogue_decision["reason"].endswith("carried by unregistered sources only: billing_api")
    status, body = await worker.get("/metrics")
    text = body.decode()
    assert 200 == status
    assert 'claimwatch_stream_events_total{event="unknown_field"} 1.0' in text
    assert 'claimwatch_stream_events_total{event="unregistered_only"} 1.0' in text
    assert 'claimwatch_dlq_messages_total{reason="contract"} 1.0' in text
