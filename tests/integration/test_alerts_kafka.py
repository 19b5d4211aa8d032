"""Alerting on the real broker: a lagging replica pages, and every metric the rules name exists."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.incidents import LAG_POLICY, lagging_replica
from tests.support.kafka import (
    TopicReader,
    Workers,
    wait_for_ticks,
    write_policy,
)
from tests.support.metrics import named_metrics

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka


def gauge(text: str, name: str, **labels: str) -> float | None:
    """The value of one series in a Prometheus text scrape."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_lagging_replica_raises_an_alert_and_the_lag_series(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A replica serving the owner's values 6 s late: replica_lag alert and lag on /metrics."""
    worker = await workers.launch(write_policy(tmp_path, LAG_POLICY))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    await lagging_replica(kafka_bootstrap, worker.prefix)

    def paged(records: list[Any]) -> bool:
        alerts = [r.json() for r in records]
        return any(
            a["kind"] == "replica_lag"
            and a["source"] == "reporting-replica"
            and a["status"] in ("lagging", "stalled")
            for a in alerts
        )

    async with TopicReader(kafka_bootstrap, worker.names.alerts) as reader:
        records = await reader.wait_for(paged, 60.0, "a replica_lag alert")
    first = next(r.json() for r in records if r.json()["kind"] == "replica_lag")
    assert ("payment_status", "ok") == (first["field"], first["previous_status"])

    lag = None
    for _ in range(60):
        status, body = await worker.get("/metrics")
        lag = gauge(
            body.decode(),
            "claimwatch_source_lag_seconds",
            source="reporting-replica",
            field="payment_status",
        )
        if lag:
            break
        await asyncio.sleep(0.5)
    assert 200 == status
    assert lag is not None and 5.0 <= lag <= 8.0, lag


async def test_every_metric_of_the_rules_and_dashboard_is_in_a_real_scrape(
    workers: Workers, tmp_path: Path
) -> None:
    """The rules and the dashboard name only series a running worker exposes; promtool agrees."""
    worker = await workers.launch(write_policy(tmp_path, LAG_POLICY))
    status, body = await worker.get("/metrics")
    text = body.decode()
    assert 200 == status
    present = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
    assert set() == named_metrics() - present
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is not installed: run `make tools`"
    check = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True)
    assert 0 == check.returncode, check.stdout + check.stderr
