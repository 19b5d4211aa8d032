"""Two workers joining and leaving under 300 claims/s: every recovery within 15 s, not growing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from claimwatch.wire.topics import TopicNames, partition_for

from tests.support.kafka import REPO, TopicReader, Workers, rfc3339, unique

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]

POLICY = REPO / "examples" / "policy.yaml"
RATE = 300  # claims per second
FACTS = 2_000
PARTITIONS = 4
CYCLES = int(os.environ.get("CHURN_CYCLES", "5"))
RECOVERY_LIMIT_S = 15.0
#: time given to each membership change before the next one
SETTLE_S = 25.0


class Load:
    """Publishes claims at RATE and remembers when each claim id was sent."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.bootstrap = bootstrap
        self.names = TopicNames(prefix)
        self.run = unique("churn")
        self.sent_at: dict[str, float] = {}

    async def publish(self, stop: asyncio.Event) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            n = 0
            started = time.monotonic()
            while not stop.is_set():
                due = started + n / RATE
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                fact = f"invoice:C{n % FACTS}|payment_status"
                claim_id = f"{self.run}-{n}"
                value = {
                    "claim_id": claim_id,
                    "subject": fact.split("|")[0],
                    "field": "payment_status",
                    "source": "billing-api",
                    "observed_at": rfc3339(datetime.now(UTC)),
                    "status": "ok",
                    "value": "paid" if n % 3 else "unpaid",
                }
                self.sent_at[claim_id] = time.monotonic()
                await producer.send(
                    self.names.claims,
                    orjson.dumps(value),
                    key=fact.encode(),
                    partition=partition_for(fact.encode(), PARTITIONS),
                )
                n += 1
        finally:
            await producer.stop()


class Decided:
    """Reads decisions and keeps, per partition, when each decided claim was seen."""

    def __init__(self, bootstrap: str, prefix: str, load: Load) -> None:
        self.reader = TopicReader(bootstrap, TopicNames(prefix).decisions)
        self.load = load
        #: (partition, time the decision was read, newest send time of its claims)
        self.seen: list[tuple[int, float, float]] = []

    async def follow(self, stop: asyncio.Event) -> None:
        async with self.reader:
            while not stop.is_set():
                for record in await self.reader.poll(0.2):
                    now = time.monotonic()
                    sent = [
                        self.load.sent_at.get(c["claim_id"], 0.0) for c in record.json()["claims"]
                    ]
                    self.seen.append((record.partition, now, max(sent, default=0.0)))

    def outages(self, events: list[float], end: float) -> list[float]:
        """Per event: the longest time any partition went without a decision until the next.

        A gap between two consecutive decisions of a partition counts for the event in
        whose interval it ends; under a steady load a healthy partition's gaps are far
        below a second, so the longest gap is how long that membership change stopped it.
        """
        bounds = [*events, end]
        worst = [0.0] * len(events)
        last: dict[int, float] = {}
        for partition, read_at, _sent in sorted(self.seen, key=lambda s: s[1]):
            before = last.get(partition)
            last[partition] = read_at
            if before is None:
                continue
            for index in range(len(events)):
                if bounds[index] <= read_at < bounds[index + 1]:
                    worst[index] = max(worst[index], read_at - before)
        return worst

    async def wait_steady(self, timeout: float = 90.0) -> None:
        """Wait until every partition has decided something."""
        deadline = time.monotonic() + timeout
        while {p for p, _, _ in self.seen} != set(range(PARTITIONS)):
            if time.monotonic() > deadline:
                raise AssertionError(f"not every partition decided within {timeout:.0f}s")
            await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def running(*coroutines: Any) -> AsyncIterator[asyncio.Event]:
    """Run background loops until the block ends (they get a stop event)."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(c(stop)) for c in coroutines]
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def test_two_workers_join_and_leave_five_times_each_recovery_within_15s(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Joins and leaves under load: no partition stops deciding for more than 15 s."""
    first = await workers.launch(POLICY, partitions=PARTITIONS)
    second = workers.new(POLICY, prefix=first.prefix, app_id=first.app_id, partitions=PARTITIONS)
    load = Load(kafka_bootstrap, first.prefix)
    decided = Decided(kafka_bootstrap, first.prefix, load)
    events: list[tuple[str, float]] = []
    async with running(load.publish, decided.follow):
        await decided.wait_steady()
        await asyncio.sleep(5.0)
        for _ in range(CYCLES):
            events.append(("join", time.monotonic()))
            second.start()
            await asyncio.sleep(SETTLE_S)
            events.append(("leave", time.monotonic()))
            await asyncio.to_thread(second.kill, signal.SIGTERM)  # the loop keeps running
            await asyncio.sleep(SETTLE_S)
        end = time.monotonic()
    assert "Crashed" not in first.log + second.log
    outages = decided.outages([at for _, at in events], end)
    figures = ", ".join(
        f"{what} {took:.1f}s" for (what, _), took in zip(events, outages, strict=True)
    )
    print(f"churn: longest partition stop per change under {RATE} claims/s: {figures}")
    offset = time.time() - time.monotonic()
    for what, at in events:
        print(f"  {what} at {datetime.fromtimestamp(at + offset, UTC).isoformat()}")
    assert [] == [t for t in outages if t > RECOVERY_LIMIT_S], figures
