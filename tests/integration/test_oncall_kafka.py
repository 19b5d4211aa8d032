"""On-call end to end: a live worker, real Prometheus and Alertmanager, pages at a webhook.

Prometheus scrapes the worker and evaluates the project's own rules; Alertmanager routes
and inhibits with the project's own config; the test's webhook is the pager. Only the
targets, the receivers' URLs and the waits differ from the shipped files (see
`tests.support.monitoring`: every `for:` is 2 s here, scrape and evaluation every second,
group waits 1 s). Each page's delay from the first claim of its incident is printed and
written to `.cache/oncall-pages.json`.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.claims import envelope
from tests.support.incidents import lagging_replica
from tests.support.kafka import (
    ADMIN_ENV,
    ADMIN_HEADERS,
    REPO,
    Workers,
    publish_claims,
    rfc3339,
    wait_for_ticks,
    write_policy,
)
from tests.support.monitoring import Server, alertmanager, prometheus, webhook

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]

#: payment_status: the replica lags behind the owner; refund_state and risk_state: sources
#: of one class disagree (conflicts); the detectors' windows are a test's seconds
POLICY = """\
policy_version: oncall-test
defaults: {freshness: 5m, settle: 0s}
sources:
  billing-api:       {authority: system_of_record, lineage: ledger}
  reporting-replica: {authority: derived, lineage: reporting}
  ledger-a:          {authority: system_of_record, lineage: a}
  ledger-b:          {authority: system_of_record, lineage: b}
  scorer-a:          {authority: derived, lineage: scorer-a}
  scorer-b:          {authority: derived, lineage: scorer-b}
fields:
  payment_status: {type: enum, values: [paid, unpaid], freshness: 2s, owner: billing-api}
  refund_state:   {type: enum, values: [open, closed], freshness: 5m}
  risk_state:     {type: enum, values: [low, high], freshness: 5m}
alerts:
  conflict_spike: {window: 30s, min_count: 5}
  replica_lag: {evaluation: 120s, min_samples: 3}
"""
SPIKE_FACTS = 10
OUT = REPO / ".cache" / "oncall-pages.json"


def _now(offset_ms: int = 0) -> str:
    return rfc3339(datetime.now(UTC) + timedelta(milliseconds=offset_ms))


async def _conflicts(bootstrap: str, prefix: str, field: str, pairs: list[tuple[str, str]]) -> None:
    """SPIKE_FACTS facts of `field` enter conflict, each between one pair of sources."""
    values = {"refund_state": ("open", "closed"), "risk_state": ("low", "high")}[field]
    claims = []
    for i in range(SPIKE_FACTS):
        first, second = pairs[i % len(pairs)]
        subject = f"account:{field}-{i}"
        for source, value in ((first, values[0]), (second, values[1])):
            claim = envelope(
                f"{field}-{i}-{source}", source, value, subject=subject, field=field,
                observed_at=_now(),
            )  # fmt: skip
            claims.append(claim)
    await publish_claims(bootstrap, prefix, claims)


async def _firing_in_prometheus(prom: Server, timeout: float, **labels: str) -> None:
    """Wait until Prometheus holds a firing alert with `labels`."""
    deadline = time.monotonic() + timeout
    found: list[Any] = []
    while time.monotonic() < deadline:
        found = (await prom.get("/api/v1/alerts"))["data"]["alerts"]
        if any(
            a["state"] == "firing" and all(a["labels"].get(k) == v for k, v in labels.items())
            for a in found
        ):
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"Prometheus never fired {labels}; alerts: {found}")


async def test_incidents_page_the_on_call_through_prometheus_and_alertmanager(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Spike and lag page; the lagging source's conflicts are inhibited; a stop pages."""
    worker = await workers.launch(write_policy(tmp_path, POLICY), extra_env=ADMIN_ENV)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    delays: dict[str, float] = {}
    async with webhook() as hook:
        with (
            alertmanager(tmp_path / "am", hook) as am,
            prometheus(tmp_path / "prom", f"127.0.0.1:{worker.web_port}", am.url) as prom,
        ):
            await am.ready()
            await prom.ready()

            # 1. owners of refund_state disagree on ten facts at once
            started = time.monotonic()
            await _conflicts(
                kafka_bootstrap, worker.prefix, "refund_state", [("ledger-a", "ledger-b")]
            )
            page = await hook.wait_for(
                60.0, alertname="ClaimwatchConflictSpike", field="refund_state"
            )
            delays["ClaimwatchConflictSpike"] = page.at - started
            example = page.body
            assert ("on-call", "page") == (page.receiver, page.labels["severity"])

            # 2. the replica keeps serving the owner's old value of payment_status
            started = time.monotonic()
            await lagging_replica(kafka_bootstrap, worker.prefix)
            page = await hook.wait_for(
                90.0, alertname="ClaimwatchReplicaLag", source="reporting-replica"
            )
            delays["ClaimwatchReplicaLag"] = page.at - started
            assert "payment_status" == page.labels["field"]

            # 3. conflicts led by the lagging replica: Prometheus fires, Alertmanager holds back
            pairs = [("reporting-replica", "scorer-a"), ("reporting-replica", "scorer-b")]
            await _conflicts(kafka_bootstrap, worker.prefix, "risk_state", pairs)
            spike = {"alertname": "ClaimwatchConflictSpike", "field": "risk_state"}
            await _firing_in_prometheus(prom, 60.0, **spike, source="reporting-replica")
            inhibited: list[Any] = []
            for _ in range(50):
                held = await am.get('/api/v2/alerts?filter=alertname="ClaimwatchConflictSpike"')
                inhibited = [
                    a for a in held
                    if a["labels"].get("field") == "risk_state" and a["status"]["inhibitedBy"]
                ]  # fmt: skip
                if inhibited:
                    break
                await asyncio.sleep(0.2)
            await asyncio.sleep(3)  # longer than the group wait: a page would have come
            assert [] == hook.matching(**spike)
            assert 1 == len(inhibited) and "suppressed" == inhibited[0]["status"]["state"]

            # 4. the worker stops processing claims
            started = time.monotonic()
            status, _ = await worker.post("/agents/process_claims/stop", headers=ADMIN_HEADERS)
            assert 200 == status
            page = await hook.wait_for(60.0, alertname="ClaimwatchWorkerNotReady")
            delays["ClaimwatchWorkerNotReady"] = page.at - started

    OUT.parent.mkdir(parents=True, exist_ok=True)
    seconds = {k: round(v, 1) for k, v in delays.items()}
    OUT.write_text(json.dumps({"seconds": seconds, "page": example}, indent=2) + "\n")
    print("seconds from incident start to page:", json.dumps(delays))
