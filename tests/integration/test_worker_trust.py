"""The worker as the README starts it (default store): decides, heals its state, tells health."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.run import EXIT_STOP_OVERDUE

from tests.support.claims import envelope
from tests.support.kafka import (
    ADMIN_ENV,
    ADMIN_HEADERS,
    REPO,
    TopicReader,
    Workers,
    delete_topics,
    fact_key,
    offline_resolve,
    publish_claims,
    rfc3339,
    summary,
    unique,
)
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = EXAMPLE_POLICY
EXAMPLES = REPO / "examples" / "claims.jsonl"
#: the `--now` of the README's offline example
EXAMPLE_NOW = "2026-09-14T09:12:30Z"


def examples_shifted_to(now: datetime) -> list[dict[str, Any]]:
    """The README's example claims with their times moved so that EXAMPLE_NOW is `now`."""
    shift = parse_rfc3339(rfc3339(now)) - parse_rfc3339(EXAMPLE_NOW)
    claims = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    run = unique("run")
    for claim in claims:
        claim["observed_at"] = format_rfc3339(parse_rfc3339(claim["observed_at"]) + shift)
        claim["claim_id"] = f"{run}-{claim['claim_id']}"
    return claims


async def live_decisions(
    bootstrap: str, prefix: str, wanted: set[str], timeout: float = 60.0
) -> dict[str, dict[str, Any]]:
    """The latest decision of each wanted fact, once every one has one and 3 s passed quietly."""
    async with TopicReader(bootstrap, TopicNames(prefix).decisions) as reader:

        def all_decided(records: list[Any]) -> bool:
            return wanted <= {fact_key(r.json()) for r in records}

        await reader.wait_for(all_decided, timeout, f"decisions for {sorted(wanted)}")
        await reader.drain(idle=3.0, timeout=timeout)
        latest: dict[str, dict[str, Any]] = {}
        for record in sorted(reader.records, key=lambda r: (r.partition, r.offset)):
            decision = record.json()
            latest[fact_key(decision)] = decision
        return latest


async def dead_lettered_ids(bootstrap: str, prefix: str) -> dict[str, str]:
    """claim_id -> reason of every DLQ record that is a JSON claim."""
    async with TopicReader(bootstrap, TopicNames(prefix).dlq) as reader:
        records = await reader.drain(idle=1.0)
    found = {}
    for record in records:
        try:
            claim = json.loads(record.value)
        except ValueError:
            continue
        if isinstance(claim, dict) and "claim_id" in claim:
            found[str(claim["claim_id"])] = record.headers["claimwatch.reason"].decode()
    return found


async def decides_the_examples(
    kafka_bootstrap: str, prefix: str, tmp_path: Path, expect_decided: set[str]
) -> None:
    """Publish the shifted examples; every fact decides as `claimwatch resolve` does.

    A fact whose claims are all older than freshness + grace at arrival is decided too: its
    claims are listed `stale`, as the offline example shows them (docs/concepts.md#time).
    """
    now = datetime.now(UTC)
    claims = examples_shifted_to(now)
    offline = offline_resolve(POLICY, claims, rfc3339(now), tmp_path / unique("offline"))
    await publish_claims(kafka_bootstrap, prefix, claims)
    live = await live_decisions(kafka_bootstrap, prefix, expect_decided)
    assert expect_decided == set(live)
    assert set(offline) == set(live)
    for key, decision in live.items():
        assert summary(offline[key]) == summary(decision), key
    # a claim copied to the DLQ (its contract broken) is still listed by its fact's decision
    covered = {c["claim_id"] for d in live.values() for c in d["claims"]}
    assert set() == set(await dead_lettered_ids(kafka_bootstrap, prefix)) - covered


#: every example fact, invoice:INV-3 included (its one claim is 150 s old with 1 m freshness
#: and 30 s grace when it arrives: decided `insufficient`, the claim listed `stale`)
EXAMPLE_FACTS = {
    "invoice:INV-3|payment_status",
    "customer:42|risk_score",
    "customer:42|shipping_address",
    "invoice:INV-1|payment_status",
    "invoice:INV-1|balance",
    "invoice:INV-2|payment_status",
    "invoice:INV-4|payment_status",
    "unit:SKU-9|unit_price",
}


async def test_readme_worker_decides_examples_and_heals_its_local_state(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Default store: decides like resolve; another prefix and recreated topics start healthy."""
    data_dir = tmp_path / "shared-data"
    first = await workers.launch(POLICY, data_dir=data_dir)
    await decides_the_examples(kafka_bootstrap, first.prefix, tmp_path, EXAMPLE_FACTS)
    first.kill()

    other = await workers.launch(POLICY, data_dir=data_dir, app_id=first.app_id)
    await decides_the_examples(kafka_bootstrap, other.prefix, tmp_path, EXAMPLE_FACTS)
    other.kill()

    await delete_topics(kafka_bootstrap, [first.prefix])
    await asyncio.sleep(3.0)  # topic deletion completes asynchronously
    await first.launch()
    await decides_the_examples(kafka_bootstrap, first.prefix, tmp_path, EXAMPLE_FACTS)
    assert "Crashed" not in first.log
    assert "ConsistencyError" not in first.log


async def test_health_is_503_with_a_reason_while_an_agent_is_stopped(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """POST /agents/process_claims/stop makes /health 503 naming it; a restart makes it 200."""
    worker = await workers.launch(POLICY, extra_env=ADMIN_ENV)
    status, body = await worker.post("/agents/process_claims/stop", headers=ADMIN_HEADERS)
    assert 200 == status, body
    status, body = await worker.get("/health")
    assert 503 == status
    assert ["agent process_claims is not running"] == json.loads(body)["reasons"]
    await worker.restart(signal.SIGTERM)
    await decides_the_examples(kafka_bootstrap, worker.prefix, tmp_path, EXAMPLE_FACTS)


@pytest.mark.slow
async def test_health_is_503_while_the_broker_is_unreachable(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, broker_pause: Any
) -> None:
    """A paused broker: 503 naming the broker after the timeout; 200 and deciding again after."""
    worker = await workers.launch(POLICY, extra_args=("--health-broker-timeout", "5"))
    async with broker_pause():
        deadline = time.monotonic() + 30
        reasons: list[str] = []
        while time.monotonic() < deadline and not any("broker" in r for r in reasons):
            status, body = await worker.get("/health")
            reasons = json.loads(body)["reasons"] if status == 503 else []
            await asyncio.sleep(0.5)
        assert any("broker unreachable" in r for r in reasons), reasons
    await worker.ready(timeout=60)
    await decides_the_examples(kafka_bootstrap, worker.prefix, tmp_path, EXAMPLE_FACTS)


@pytest.mark.slow
async def test_sigterm_stops_the_worker_within_its_stop_timeout_while_the_broker_is_gone(
    workers: Workers, tmp_path: Path, broker_pause: Any
) -> None:
    """A paused broker: SIGTERM ends the worker within the stop timeout (exit 4, or clean)."""
    worker = await workers.launch(POLICY, extra_env=(("CLAIMWATCH_STOP_TIMEOUT_S", "5"),))
    async with broker_pause():
        await asyncio.sleep(2)
        started = time.monotonic()
        code = worker.kill(signal.SIGTERM, timeout=20)
        took = time.monotonic() - started
    assert code in (0, EXIT_STOP_OVERDUE), worker.log
    assert took < 15, f"stopped after {took:.1f}s"
    if code == EXIT_STOP_OVERDUE:
        assert "did not stop within 5s" in worker.log
    assert "Traceback" not in worker.log


def rotating_claim(prefix_id: str, index: int, observed: datetime) -> dict[str, Any]:
    """Claim `index` of a billing-api stream over 16 invoices, alternately unpaid and paid."""
    value = "paid" if index % 2 else "unpaid"
    subject = f"invoice:R{index % 16}"
    return envelope(
        f"{prefix_id}-{index}", "billing-api", value, subject=subject, observed_at=rfc3339(observed)
    )


async def first_decision_of(
    bootstrap: str, prefix: str, run: str, started: float, timeout: float = 60.0
) -> float:
    """Seconds from `started` until a decision lists a claim of `run` (published meanwhile)."""
    async with TopicReader(bootstrap, TopicNames(prefix).decisions) as reader:
        index = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await publish_claims(bootstrap, prefix, [rotating_claim(run, index, datetime.now(UTC))])
            index += 1
            for record in await reader.poll(0.2):
                ids = [c["claim_id"] for c in record.json()["claims"]]
                if any(i.startswith(f"{run}-") for i in ids):
                    return time.monotonic() - started
    raise AssertionError(f"no decision for {run} within {timeout:.0f}s")


@pytest.mark.slow
async def test_restart_after_sigkill_decides_within_15_seconds(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """SIGKILL, restart: the first new decision comes within 15 s (static membership)."""
    worker = await workers.launch(POLICY)
    warm = [rotating_claim("warm", i, datetime.now(UTC) - timedelta(seconds=1)) for i in range(64)]
    await publish_claims(kafka_bootstrap, worker.prefix, warm)
    await first_decision_of(kafka_bootstrap, worker.prefix, "warm2", time.monotonic())
    worker.kill()
    started = time.monotonic()
    worker.start()
    took = await first_decision_of(kafka_bootstrap, worker.prefix, unique("after"), started)
    print(f"restart after SIGKILL: first new decision after {took:.1f}s")
    assert took <= 15.0
