"""Draining a 50,000-claim backlog at settle 0: one decision per claim at most, no commit stall."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from claimwatch.wire.topics import TopicNames, ensure_topics, partition_for

from tests.support.kafka import REPO, TopicReader, Workers, rfc3339, unique, write_policy

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CLAIMS = 50_000
FACTS = 10_000
PARTITIONS = 4
STALL_LIMIT_S = 5.0
OVERLAP = re.compile(r"Timer commit is overlapping \(interval=[0-9.]+ runtime=([0-9.]+)\)")


def settle_zero_policy(directory: Path) -> Path:
    """The example policy with `settle: 0s` (every claim decided when it arrives).

    payment_status gets a freshness of 1 h: with the example's 60 s, a drain longer than a
    minute would rightly re-decide every fact as `insufficient` when its claims go stale,
    and those decisions are not re-emissions.
    """
    text = (REPO / "examples" / "policy.yaml").read_text(encoding="utf-8")
    text = text.replace("settle: 2s", "settle: 0s", 1)
    text = text.replace("refunded], freshness: 60s", "refunded], freshness: 1h", 1)
    assert "freshness: 1h" in text
    return write_policy(directory, text)


async def publish_backlog(bootstrap: str, prefix: str) -> None:
    """CLAIMS claims on FACTS facts, sent before any worker runs."""
    names = TopicNames(prefix)
    await ensure_topics(bootstrap, names, PARTITIONS)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks="all")
    await producer.start()
    run = unique("backlog")
    observed = rfc3339(datetime.now(UTC))
    try:
        for n in range(CLAIMS):
            fact = f"invoice:B{n % FACTS}|payment_status"
            claim = {
                "claim_id": f"{run}-{n}",
                "subject": fact.split("|")[0],
                "field": "payment_status",
                "source": "billing-api" if n % 2 else "reporting-replica",
                "observed_at": observed,
                "status": "ok",
                "value": ("paid", "unpaid", "overdue")[n % 3],
            }
            key = fact.encode()
            await producer.send(
                names.claims,
                orjson.dumps(claim),
                key=key,
                partition=partition_for(key, PARTITIONS),
            )
        await producer.flush()
    finally:
        await producer.stop()


async def committed(bootstrap: str, group: str, topic: str) -> int:
    """The group's committed offsets on `topic`, summed over partitions."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
        return sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic)
    finally:
        await admin.close()


async def claims_lag(worker: Any, topic: str) -> float:
    """The worker's claimwatch_consumer_lag_records summed over the claims partitions."""
    _, body = await worker.get("/metrics")
    prefix = 'claimwatch_consumer_lag_records{partition="'
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in body.decode().splitlines()
        if line.startswith(prefix) and f'topic="{topic}"' in line
    )


async def test_backlog_drains_with_at_most_one_decision_per_claim_and_no_commit_stall(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """50,000 queued claims, one worker: <= 1.0 decisions per claim; commits never stall > 5 s."""
    worker = workers.new(settle_zero_policy(tmp_path), partitions=PARTITIONS)
    names = TopicNames(worker.prefix)
    await publish_backlog(kafka_bootstrap, worker.prefix)
    started = time.monotonic()
    await worker.launch()
    lag_at_start = await claims_lag(worker, names.claims)
    progress: list[tuple[float, int]] = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        done = await committed(kafka_bootstrap, worker.app_id, names.claims)
        progress.append((time.monotonic(), done))
        if done >= CLAIMS:
            break
        await asyncio.sleep(0.25)
    drained = time.monotonic() - started
    assert CLAIMS <= progress[-1][1], f"only {progress[-1][1]} of {CLAIMS} committed"
    async with TopicReader(kafka_bootstrap, names.decisions) as reader:
        decisions = await reader.drain(idle=3.0, timeout=120)
    ratio = len(decisions) / CLAIMS
    ids = [r.json()["decision_id"] for r in decisions]
    repeated = len(ids) - len(set(ids))
    changes = [t for (_, before), (t, n) in itertools.pairwise(progress) if n != before]
    longest_stall = max((b - a for a, b in itertools.pairwise(changes)), default=0.0)
    longest_commit = max((float(m) for m in OVERLAP.findall(worker.log)), default=0.0)
    print(
        f"backlog of {CLAIMS}: drained in {drained:.1f}s, {ratio:.3f} decisions per claim "
        f"({repeated} repeated ids), "
        f"longest commit {longest_commit:.1f}s, committed offsets stood still {longest_stall:.1f}s "
        "at most, "
        f"{worker.log.count('producer buffer full')} 'producer buffer full' warnings"
    )
    await asyncio.sleep(2.0)  # a commit interval after the last commit
    lag_at_end = await claims_lag(worker, names.claims)
    assert lag_at_start > CLAIMS / 2, "the lag metric shows the backlog"
    # the worker writes a tick into each claims partition every second: a drained worker
    # still has the last ones uncommitted (at most a few per partition), not the backlog
    assert lag_at_end <= 3 * PARTITIONS
    assert ratio <= 1.0
    assert 0 == repeated
    assert longest_commit <= STALL_LIMIT_S
    assert longest_stall <= STALL_LIMIT_S
    assert "Crashed" not in worker.log
