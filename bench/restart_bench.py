"""Restart after SIGKILL with 100,000 live facts: the rocksdb store against the memory store.

For each store: a worker decides one claim on each of FACTS facts (settle 0), is killed
with SIGKILL once its offsets are committed, and is started again on the same data
directory. Measured: seconds from the restart to /health 200, and to the first decision of
a claim published after the restart. The memory store replays the whole changelog; the
rocksdb store reopens its local state and reads only the tail it lacks.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from claimwatch.wire.kafka import env_bootstrap
from claimwatch.wire.topics import TopicNames, ensure_topics, partition_for

from bench.children import PARTITIONS, free_port, worker

FACTS = int(os.environ.get("CLAIMWATCH_BENCH_RESTART_FACTS", "100000"))
POLICY = Path("examples/policy.yaml")


def _claim(run: str, n: int) -> tuple[bytes, bytes]:
    fact = f"invoice:F{n}|payment_status"
    body = {
        "claim_id": f"{run}-{n}",
        "subject": f"invoice:F{n}",
        "field": "payment_status",
        "source": "billing-api",
        "observed_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "status": "ok",
        "value": "paid",
    }
    return fact.encode(), orjson.dumps(body)


async def _publish(names: TopicNames, run: str, count: int, start: int = 0) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=env_bootstrap(), linger_ms=20)
    await producer.start()
    try:
        for n in range(start, start + count):
            key, value = _claim(run, n)
            await producer.send(
                names.claims, value, key=key, partition=partition_for(key, PARTITIONS)
            )
        await producer.flush()
    finally:
        await producer.stop()


async def _committed(group: str, topic: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=env_bootstrap())
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
        return sum(m.offset for tp, m in offsets.items() if tp.topic == topic)
    finally:
        await admin.close()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as page:
            return bool(page.status == 200)
    except (urllib.error.URLError, OSError):
        return False


async def _first_new_decision(names: TopicNames, run: str, port: int) -> tuple[float, float]:
    """(seconds to /health 200, seconds to a decision of a claim sent after the restart)."""
    consumer = AIOKafkaConsumer(
        names.decisions, bootstrap_servers=env_bootstrap(), auto_offset_reset="latest"
    )
    await consumer.start()
    started = time.perf_counter()
    healthy_at: float | None = None
    try:
        n = FACTS
        while time.perf_counter() - started < 600:
            if healthy_at is None and _healthy(port):
                healthy_at = time.perf_counter() - started
            await _publish(names, run, 1, n)
            n += 1
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    ids = [c["claim_id"] for c in json.loads(record.value)["claims"]]
                    if any(int(i.rsplit("-", 1)[1]) >= FACTS for i in ids if i.startswith(run)):
                        took = time.perf_counter() - started
                        return (healthy_at if healthy_at is not None else took), took
        raise RuntimeError("no decision within 600 s of the restart")
    finally:
        await consumer.stop()


def _settle_zero(work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    path = work / "policy.yaml"
    path.write_text(POLICY.read_text().replace("settle: 2s", "settle: 0s", 1))
    return path


def measure(store: str, work: Path) -> dict[str, Any]:
    """One store: fill FACTS facts, SIGKILL, restart; the two times."""
    names = TopicNames(f"bench-restart-{uuid.uuid4().hex[:8]}.")
    app_id = f"restart-{store.split(':')[0]}-{uuid.uuid4().hex[:6]}"
    asyncio.run(ensure_topics(env_bootstrap(), names, PARTITIONS))
    run = uuid.uuid4().hex[:8]
    asyncio.run(_publish(names, run, FACTS))
    port = free_port()
    policy = _settle_zero(work)
    child = worker(policy, names.prefix, app_id, port, work, store=store).start()
    deadline = time.monotonic() + 900
    while asyncio.run(_committed(app_id, names.claims)) < FACTS:
        child.check()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{store}: {FACTS} claims not committed within 900 s")
        time.sleep(1.0)
    time.sleep(3.0)  # a commit interval or two: the changelog is flushed before each commit
    assert child.proc is not None
    child.proc.send_signal(signal.SIGKILL)
    child.proc.wait(30)
    again = worker(policy, names.prefix, app_id, port, work, store=store).start()
    try:
        healthy, decided = asyncio.run(_first_new_decision(names, run, port))
    finally:
        again.stop()
    return {
        "facts": FACTS,
        "to_health_s": round(healthy, 1),
        "to_first_decision_s": round(decided, 1),
    }


def run() -> dict[str, Any]:
    """Both stores, and how many times faster the rocksdb store comes back."""
    with tempfile.TemporaryDirectory(prefix="claimwatch-restart-") as tmp:
        rocks = measure("rocksdb://", Path(tmp) / "rocksdb")
        memory = measure("memory://", Path(tmp) / "memory")
    ratio = memory["to_first_decision_s"] / max(rocks["to_first_decision_s"], 0.1)
    return {"rocksdb": rocks, "memory": memory, "memory_over_rocksdb": round(ratio, 2)}


if __name__ == "__main__":
    print(json.dumps(run()))
    sys.exit(0)
