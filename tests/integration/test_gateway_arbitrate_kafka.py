"""The gateway's arbitrator on the real broker with a real worker (results given directly)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest
from claimwatch.client.facts import FactPages
from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from mcp.types import CallToolResult, TextContent

from tests.support.gateway_policy import KEY_ENV, SECRET, arbitrating_worker, mapping, signed
from tests.support.kafka import WorkerProcess, Workers

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

TOOLS = {
    "us_balance": signed("billing-api@us-east-1", "balance"),
    "eu_balance": signed("billing-api@eu-west-1", "balance", on_escalate="error"),
    "billing_status": signed("billing-api", "payment_status"),
    "report_status": mapping("reporting-replica", "payment_status"),
}


def result(status: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f'{{"status": "{status}"}}')],
        structured_content={"status": status},
    )


async def started(
    workers: Workers, tmp_path: Path, bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> WorkerProcess:
    monkeypatch.setenv(KEY_ENV, SECRET)  # the arbitrator signs in this process
    return await arbitrating_worker(workers, tmp_path)


def arbitrator(worker: WorkerProcess, bootstrap: str, timeout: float) -> Arbitrator:
    settings = GatewaySettings(worker.url, bootstrap, worker.prefix, timeout)
    return Arbitrator.from_config(TOOLS, ConfigSource("gateway.yaml"), settings)


async def test_two_servers_disagree_and_an_owner_decides(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await started(workers, tmp_path, kafka_bootstrap, monkeypatch)
    async with arbitrator(worker, kafka_bootstrap, 15.0) as hook:
        us = await hook("us_balance", {"invoice_id": "INV-2"}, result("paid"))
        eu = await hook("eu_balance", {"invoice_id": "INV-2"}, result("unpaid"))
        owner, replica = await asyncio.gather(
            hook("billing_status", {"invoice_id": "INV-7"}, result("paid")),
            hook("report_status", {"invoice_id": "INV-7"}, result("unpaid")),
        )
        failed = await hook(
            "report_status",
            {"invoice_id": "INV-8"},
            CallToolResult(
                content=[TextContent(type="text", text="warehouse down")], is_error=True
            ),
        )
    first, second = us.structured_content["claimwatch"], eu.structured_content["claimwatch"]
    assert ("resolved", "paid") == (first["outcome"], first["value"])
    assert ("conflict", "escalate") == (second["outcome"], second["action"])
    assert {
        ("billing-api@us-east-1", "paid", "contradicting"),
        ("billing-api@eu-west-1", "unpaid", "contradicting"),
    } == {(c["source"], c.get("value"), c["disposition"]) for c in second["claims"]}
    assert eu.is_error is True  # eu_balance escalates as an error
    assert (
        "conflict on invoice:INV-2 balance: billing-api@us-east-1 says paid, "
        "billing-api@eu-west-1 says unpaid; escalate — do not act on this value"
    ) == eu.content[-1].text or (
        "conflict on invoice:INV-2 balance: billing-api@eu-west-1 says unpaid, "
        "billing-api@us-east-1 says paid; escalate — do not act on this value"
    ) == eu.content[-1].text
    assert "unpaid" == eu.structured_content["status"]  # the upstream result is all there
    for out in (owner, replica):
        note = out.structured_content["claimwatch"]
        assert ("resolved", "paid", "proceed") == (note["outcome"], note["value"], note["action"])
    note = failed.structured_content["claimwatch"]
    assert [("reporting-replica", "error", "no_evidence", False)] == [
        (c["source"], c["status"], c["disposition"], "value" in c) for c in note["claims"]
    ]
    assert failed.is_error is True


async def test_worker_down_the_call_returns_and_the_claim_is_decided_later(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await started(workers, tmp_path, kafka_bootstrap, monkeypatch)
    async with arbitrator(worker, kafka_bootstrap, 2.0) as hook:
        hook.settings = GatewaySettings(worker.url, kafka_bootstrap, worker.prefix, 15.0)
        warm = await hook("us_balance", {"invoice_id": "INV-3"}, result("paid"))
        assert "resolved" == warm.structured_content["claimwatch"]["outcome"]
        hook.settings = GatewaySettings(worker.url, kafka_bootstrap, worker.prefix, 2.0)
        worker.kill(signal.SIGTERM)
        began = time.monotonic()
        out = await hook("us_balance", {"invoice_id": "INV-4"}, result("unpaid"))
        took = time.monotonic() - began
        note = out.structured_content["claimwatch"]
        assert took < 2.5, took
        assert (False, "invoice:INV-4") == (note["arbitrated"], note["subject"])
        assert note["claim"] in ("sent", "queued")
        assert out.content[-1].text.startswith("unarbitrated result for invoice:INV-4 balance: ")
        assert "unpaid" == out.structured_content["status"]
        for _ in range(100):  # the outbox (when used) reaches the broker, which is up
            if not len(hook.outbox):
                break
            await asyncio.sleep(0.1)
        assert 0 == len(hook.outbox)
    await worker.launch()
    async with FactPages(worker.url) as pages:
        answer = await pages.ask("invoice:INV-4", "balance", [note["claim_id"]], wait=30)
    assert answer.covered, answer
    assert answer.decision is not None
    assert ("resolved", "unpaid") == (answer.decision["outcome"], answer.decision["value"])
