"""The MCP example end to end: stdio MCP server, client, real broker, worker subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from tests.support.kafka import REPO, TopicReader, Workers, read_topic, wait_for_ticks

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE = REPO / "examples" / "mcp"
KEY_ENV = "MCP_DEMO_BILLING_KEY"
TICK = b"__tick__"


async def run_client(*args: str) -> tuple[int, list[tuple[str, dict[str, Any]]], str]:
    """Run examples/mcp/client.py: (exit code, its `claim`/`decision` lines, the whole output)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE / "client.py"),
        *args,
        cwd=REPO,
        env={**os.environ},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    text = out.decode(errors="replace")
    lines = []
    for line in text.splitlines():
        kind, _, body = line.partition(" ")
        if kind in ("claim", "decision"):
            lines.append((kind, json.loads(body)))
    assert proc.returncode is not None
    return proc.returncode, lines, text


async def test_mcp_tools_disagree_and_the_owner_wins_on_the_broker(
    workers: Workers, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Billing (owner) says paid, reporting says unpaid: resolved paid; a failed call is error."""
    monkeypatch.setenv(KEY_ENV, "mcp-integration-secret-32-bytes!")  # worker and client inherit it
    worker = await workers.launch(EXAMPLE / "policy.yaml")
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    code, lines, output = await run_client(
        "--invoice",
        "INV-1",
        "--invoice",
        "INV-BROKEN",
        "--bootstrap",
        kafka_bootstrap,
        "--topic-prefix",
        worker.prefix,
        "--worker-url",
        worker.url,
    )
    assert 0 == code, output
    claims = {(c["subject"], c["tool"]): c for kind, c in lines if kind == "claim"}
    decisions = {d["subject"]: d for kind, d in lines if kind == "decision"}

    billing = claims[("invoice:INV-1", "get_invoice_status")]
    reporting = claims[("invoice:INV-1", "get_report_status")]
    assert (("ok", "paid"), ("ok", "unpaid")) == (
        (billing["status"], billing["value"]),
        (reporting["status"], reporting["value"]),
    )
    decision = decisions["invoice:INV-1"]
    assert ("resolved", "paid", "proceed") == (
        decision["outcome"],
        decision["value"],
        decision["action"],
    )
    fates = {c["source"]: (c["disposition"], c.get("dissent")) for c in decision["claims"]}
    assert {"billing-api": ("won", None), "reporting-replica": ("outranked", True)} == fates
    assert "billing-api (system_of_record)" in output  # the explanation was printed

    async with TopicReader(kafka_bootstrap, worker.names.claims) as reader:  # ticks never idle
        await reader.wait_for(lambda rs: 4 <= sum(r.key != TICK for r in rs), 30, "4 claims")
    published = {
        (c["subject"], c["tool"]): c for c in (r.json() for r in reader.records if r.key != TICK)
    }
    broken = published[("invoice:INV-BROKEN", "get_report_status")]
    assert ("error", False) == (broken["status"], "value" in broken)
    assert "reporting warehouse query failed" in broken["error_detail"]
    assert ("resolved", "paid") == (
        decisions["invoice:INV-BROKEN"]["outcome"],
        decisions["invoice:INV-BROKEN"]["value"],
    )
    assert 64 == len(published[("invoice:INV-1", "get_invoice_status")]["signature"])
    assert [] == await read_topic(kafka_bootstrap, worker.names.dlq, idle=0.5)
