"""`claimwatch gateway` end to end: an agent, the gateway process, two ledgers, a real worker.

The agent is the SDK's client over stdio or streamable HTTP (`tests.support.gateway.agent`);
the gateway is the installed `claimwatch gateway` with a file written here; its upstreams
are two regions of a billing ledger (tests/support/mcp_upstream.py `ledger`) that disagree
about every invoice: `us` over stdio says `paid`, `eu` over streamable HTTP says `unpaid`.
The worker runs on the real broker as the README starts it, on the shared test policy
(tests/support/gateway_policy.py). Cancellation and upstream crashes through the gateway
are tested without Kafka in test_gateway_proxy.py.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from claimwatch.client.facts import FactPages
from mcp import Client
from mcp.types import CallToolResult

from tests.support.gateway import (
    TRANSPORTS,
    agent,
    free_port,
    ledger_command,
    running,
    stdio_server,
    text_of,
    upstream_command,
    wire,
    write_gateway,
)
from tests.support.gateway_policy import KEY_ENV, SECRET, arbitrating_worker, mapping, signed
from tests.support.kafka import WorkerProcess, Workers, read_topic
from tests.support.mcp_upstream import BROKEN_INVOICE, LEDGER_FAILURE

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka, pytest.mark.parametrize("transport", TRANSPORTS)]

#: The mapped tools, by the names the agent sees (both ledgers offer the same tools).
TOOLS: Final = {
    "us__invoice_status": signed("billing-api@us-east-1", "balance"),
    "eu__invoice_status": signed("billing-api@eu-west-1", "balance"),
    "us__payment_status": signed("billing-api", "payment_status"),
    "eu__payment_status": mapping("reporting-replica", "payment_status"),
}
#: The gateway's environment on top of its transport's: the key it signs with.
GATEWAY_ENV: Final = {KEY_ENV: SECRET}
#: How much later than its decide timeout a call through the gateway may return (seconds):
#: the hop agent -> gateway -> upstream and back.
MARGIN_S: Final = 1.0


@pytest.fixture(scope="module")
def eu_url() -> Iterator[str]:
    """The `eu` ledger (says `unpaid`) over streamable HTTP, for the whole module."""
    port = free_port()
    with running([*upstream_command("ledger"), "--status", "unpaid", "--http", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


def gateway_file(path: Path, worker: WorkerProcess, eu_url: str, decide_timeout: str) -> Path:
    """The gateway over both ledgers, deciding on `worker`."""
    return write_gateway(
        path,
        {"us": stdio_server(ledger_command("paid")), "eu": {"url": eu_url, "timeout": "20s"}},
        TOOLS,
        worker_url=worker.url,
        bootstrap=worker.bootstrap,
        topic_prefix=worker.prefix,
        decide_timeout=decide_timeout,
    )


def note(result: CallToolResult) -> dict[str, Any]:
    """The `claimwatch` note of an arbitrated tool's result."""
    assert result.structured_content is not None, wire(result)
    found: dict[str, Any] = result.structured_content["claimwatch"]
    return found


def claims_of(found: dict[str, Any]) -> set[tuple[str, Any, str]]:
    """(source, value, disposition) of each claim a note's decision weighed."""
    return {(c["source"], c.get("value"), c["disposition"]) for c in found["claims"]}


async def call(client: Client, tool: str, invoice_id: str) -> CallToolResult:
    return await client.call_tool(tool, {"invoice_id": invoice_id})


async def direct(url: str, tool: str, invoice_id: str) -> CallToolResult:
    """A call made straight to the upstream at `url`, not through the gateway."""
    async with Client(url, cache=None) as upstream:
        return await call(upstream, tool, invoice_id)


async def open_conflicts(client: Client, field: str, subject: str) -> dict[str, Any]:
    """`claimwatch_conflicts` once it lists `subject`, else its last answer (after 15 s).

    The worker writes the conflict record after the decision the agent was given.
    """
    answer: dict[str, Any] = {}
    for _ in range(30):
        result = await client.call_tool("claimwatch_conflicts", {"field": field})
        assert not result.is_error, text_of(result)
        answer = result.structured_content or {}
        if any(c["subject"] == subject for c in answer.get("conflicts", [])):
            break
        await anyio.sleep(0.5)
    return answer


async def test_two_ledgers_disagree_through_the_gateway(
    transport: str, workers: Workers, tmp_path: Path, eu_url: str
) -> None:
    """Conflict, owner, error claim, passthrough and claimwatch's own tools, as an agent sees."""
    worker = await arbitrating_worker(workers, tmp_path)
    config = gateway_file(tmp_path / "gateway.yaml", worker, eu_url, "15s")
    async with agent(transport, config, GATEWAY_ENV) as client:
        first = await call(client, "us__invoice_status", "INV-2")
        second = await call(client, "eu__invoice_status", "INV-2")
        replica = await call(client, "eu__payment_status", "INV-7")
        owner = await call(client, "us__payment_status", "INV-7")
        failed = await call(client, "eu__payment_status", BROKEN_INVOICE)
        document = await call(client, "eu__invoice_document", "INV-2")
        decision = await client.call_tool(
            "claimwatch_decision", {"subject": "invoice:INV-2", "field": "balance"}
        )
        explained = await client.call_tool(
            "claimwatch_explain", {"subject": "invoice:INV-2", "field": "balance"}
        )
        conflicts = await open_conflicts(client, "balance", "invoice:INV-2")

    # the first region alone: resolved; the second disagrees: the conflict covers both
    assert ("resolved", "paid", "proceed") == tuple(
        note(first)[k] for k in ("outcome", "value", "action")
    )
    contested = note(second)
    assert (True, "conflict", "escalate") == (
        contested["arbitrated"],
        contested["outcome"],
        contested["action"],
    )
    assert {
        ("billing-api@us-east-1", "paid", "contradicting"),
        ("billing-api@eu-west-1", "unpaid", "contradicting"),
    } == claims_of(contested)
    # the upstream's result is all there, followed by exactly one text block for the model
    upstream = wire(await direct(eu_url, "invoice_status", "INV-2"))
    through = wire(second)
    assert upstream["content"] == through["content"][:-1]
    assert {**upstream["structuredContent"], "claimwatch": contested} == through[
        "structuredContent"
    ]
    assert second.is_error is False  # on_escalate defaults to annotate
    sentence = second.content[-1].text  # type: ignore[union-attr]
    head, says = "conflict on invoice:INV-2 balance: ", "; escalate — do not act on this value"
    assert (True, True) == (sentence.startswith(head), sentence.endswith(says)), sentence
    assert {"billing-api@us-east-1 says paid", "billing-api@eu-west-1 says unpaid"} == set(
        sentence.removeprefix(head).removesuffix(says).split(", ")
    )

    # the owner's result carries `resolved` to its value over the replica that said otherwise
    assert note(replica)["arbitrated"] is True
    owned = note(owner)
    assert ("resolved", "paid", "proceed") == (owned["outcome"], owned["value"], owned["action"])
    assert {"billing-api": "paid", "reporting-replica": "unpaid"} == {
        c["source"]: c.get("value") for c in owned["claims"]
    }
    assert "won" == next(c["disposition"] for c in owned["claims"] if c["source"] == "billing-api")

    # an upstream isError result: an error claim, never a value; still an error to the agent
    refused = note(failed)
    assert failed.is_error is True
    assert LEDGER_FAILURE in text_of(failed)
    assert "invoice:INV-BROKEN" == refused["subject"]
    assert [("reporting-replica", "error", False)] == [
        (c["source"], c["status"], "value" in c) for c in refused["claims"]
    ]
    assert refused["value"] is None

    # an unmapped tool: the upstream's result, byte for byte
    assert wire(await direct(eu_url, "invoice_document", "INV-2")) == wire(document)

    # claimwatch's own tools, on the fact in conflict
    assert not decision.is_error, text_of(decision)
    current = decision.structured_content or {}
    assert (True, "conflict") == (current["found"], current["outcome"])
    assert claims_of(contested) == claims_of(current)
    assert not explained.is_error, text_of(explained)
    words = (explained.structured_content or {})["explanation"]
    assert "billing-api@us-east-1" in words and "billing-api@eu-west-1" in words, words
    [open_one] = [c for c in conflicts["conflicts"] if c["subject"] == "invoice:INV-2"]
    assert {("billing-api@us-east-1", "paid"), ("billing-api@eu-west-1", "unpaid")} == {
        (alt["source"], alt["value"]) for alt in open_one["competing"]
    }


async def test_worker_down_the_call_returns_in_time_and_is_decided_later(
    transport: str, workers: Workers, tmp_path: Path, eu_url: str
) -> None:
    """SIGTERM the worker: the call returns in time, unarbitrated; decided once it is back.

    The call returns within decide_timeout with the unarbitrated note and the upstream's
    result; the worker relaunched (same app id, prefix, port) decides the claim, and the
    same gateway arbitrates the next call again.
    """
    timeout = 3.0
    worker = await arbitrating_worker(workers, tmp_path)
    config = gateway_file(tmp_path / "gateway.yaml", worker, eu_url, f"{timeout:g}s")
    async with agent(transport, config, GATEWAY_ENV) as client:
        warm = note(await call(client, "us__invoice_status", "INV-3"))
        assert ("resolved", "paid") == (warm.get("outcome"), warm.get("value")), warm

        worker.kill(signal.SIGTERM)
        began = time.monotonic()
        down = await call(client, "us__invoice_status", "INV-4")
        took = time.monotonic() - began
        unarbitrated = note(down)
        assert took < timeout + MARGIN_S, took
        assert (False, "invoice:INV-4", "balance") == (
            unarbitrated["arbitrated"],
            unarbitrated["subject"],
            unarbitrated["field"],
        )
        assert "sent" == unarbitrated["claim"], unarbitrated  # the broker took it
        assert down.content[-1].text.startswith(  # type: ignore[union-attr]
            "unarbitrated result for invoice:INV-4 balance: "
        )
        assert "paid" == (down.structured_content or {})["status"]  # the result is not lost
        assert down.is_error is False

        await worker.launch()  # the same app id, topic prefix and port
        async with FactPages(worker.url) as pages:
            answer = await pages.ask(
                "invoice:INV-4", "balance", [unarbitrated["claim_id"]], wait=30
            )
        assert answer.covered, answer
        assert answer.decision is not None
        assert ("resolved", "paid") == (answer.decision["outcome"], answer.decision["value"])

        again = note(await call(client, "us__invoice_status", "INV-5"))
    assert ("resolved", "paid") == (again.get("outcome"), again.get("value")), again
    # the gateway's outbox may send the claim again after the timeout: an identical
    # duplicate, which the worker drops; nothing is dead-lettered
    assert [] == await read_topic(worker.bootstrap, worker.names.dlq, idle=0.5)
