"""How long one `Client.decide` takes, as a new user meets it: on arrival and after the window.

A worker is started as the README starts it (`claimwatch worker --policy
examples/policy.yaml`, default store and settings; its own topic prefix and port so that it
does not meet another run), then, in one `Client`, each call decides the README agent's two
claims (examples/agent.py) about a new invoice: CALLS calls asking for the decision on
arrival (the default), then CALLS waiting for the settle window (`early=False`). Printed:
each call's seconds, and per mode the median, the fastest and the slowest, as one JSON line.

    .venv/bin/python -m bench.decide_latency [CALLS] [POLICY]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claimwatch import Client
from claimwatch.wire.kafka import env_bootstrap

from bench.children import free_port, wait_healthy, worker
from bench.kafka_io import delete_topics

CALLS = 20
POLICY = Path("examples/policy.yaml")
#: Seconds the worker runs before the first call, so its partition clocks tick.
WARM_S = 3.0


def claims() -> list[dict[str, Any]]:
    """The README agent's two tool results, about a new invoice."""
    invoice = f"invoice:INV-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC).isoformat()
    common = {"subject": invoice, "field": "payment_status", "observed_at": now, "status": "ok"}
    return [
        {"claim_id": str(uuid.uuid4()), "source": "billing-api", "value": "paid", **common},
        {
            "claim_id": str(uuid.uuid4()),
            "source": "reporting-replica@eu-west-1",
            "value": "overdue",
            **common,
        },
    ]


async def timed(client: Client, early: bool) -> float:
    """Seconds one `decide` of two new claims takes."""
    started = time.perf_counter()
    decided = await client.decide(claims(), timeout=30, early=early)
    took = time.perf_counter() - started
    (decision,) = decided.values()
    if decision["outcome"] != "resolved":
        raise RuntimeError(f"unexpected decision: {decision['outcome']}: {decision['reason']}")
    return took


def figures(seconds: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "calls_s": [round(s, 3) for s in seconds],
    }


async def measure(calls: int, policy: Path) -> dict[str, Any]:
    prefix = f"bench-decide-{uuid.uuid4().hex[:8]}."
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="decide-latency-") as work:
        child = worker(policy, prefix, prefix.rstrip("."), port, Path(work)).start()
        try:
            await wait_healthy(child, port)
            await asyncio.sleep(WARM_S)
            async with Client(f"http://127.0.0.1:{port}", env_bootstrap(), prefix) as client:
                early = [await timed(client, early=True) for _ in range(calls)]
                window = [await timed(client, early=False) for _ in range(calls)]
        finally:
            child.stop()
            await delete_topics(prefix, [prefix.rstrip(".")])
    return {
        "policy": str(policy),
        "calls": calls,
        "early": figures(early),
        "window": figures(window),
    }


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    policy = Path(sys.argv[2]) if len(sys.argv) > 2 else POLICY
    print(json.dumps(asyncio.run(measure(calls, policy))))


if __name__ == "__main__":
    main()
