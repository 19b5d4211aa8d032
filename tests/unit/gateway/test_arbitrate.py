"""The arbitrator with a fake client: mapping -> claim -> decision -> annotated result."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from claimwatch.client.facts import ClaimRefused, WorkerUnavailable
from claimwatch.core.signing import verify
from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import GatewaySettings
from claimwatch.gateway.outbox import Outbox
from claimwatch.gateway.tools_config import GatewayToolMapping
from claimwatch.wire.topics import BrokerUnavailable
from mcp.types import CallToolResult, TextContent

from tests.support.gateway_fakes import FakeClient, decision

NOW = "2026-09-14T09:12:00Z"
KEY = b"k" * 32
TOOLS = {
    "get_status": GatewayToolMapping(
        subject="invoice:{invoice_id}", field="payment_status", value="status", source="billing"
    ),
    "get_status_strict": GatewayToolMapping(
        subject="invoice:{invoice_id}",
        field="payment_status",
        value="status",
        source="billing",
        on_escalate="error",
    ),
}
ARGS = {"invoice_id": "INV-2"}


def ok(status: str = "paid") -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f'{{"status": "{status}"}}')],
        structured_content={"status": status},
    )


def arbitrator(
    client: FakeClient, timeout: float = 2.0, outbox: Outbox | None = None, **kw: Any
) -> Arbitrator:
    return Arbitrator(
        TOOLS,
        GatewaySettings(decide_timeout=timeout),
        client_factory=client,
        outbox=outbox,
        clock=lambda: NOW,
        **kw,
    )


async def test_unmapped_tool_passes_through_as_the_same_object() -> None:
    client = FakeClient()
    result = ok()
    assert result is await arbitrator(client)("other_tool", ARGS, result)
    assert [] == client.decided
    assert 0 == client.opens


async def test_mapped_result_carries_its_decision_and_one_text_block() -> None:
    client = FakeClient()
    result = ok()
    async with arbitrator(client) as hook:
        out = await hook("get_status", ARGS, result)
    [claim] = client.decided
    assert ("invoice:INV-2", "payment_status", "paid", "ok", "get_status") == (
        claim["subject"],
        claim["field"],
        claim["value"],
        claim["status"],
        claim["tool"],
    )
    note = out.structured_content["claimwatch"]
    assert {
        "arbitrated": True,
        "subject": "invoice:INV-2",
        "field": "payment_status",
        "claim_id": claim["claim_id"],
        "outcome": "resolved",
        "value": "paid",
        "exists": True,
        "action": "proceed",
        "reason": "the owner decides",
        "decision_id": "d-" + claim["claim_id"][-6:],
        "claims": [
            {"source": "billing", "value": "paid", "status": "ok", "disposition": "won"},
        ],
    } == note
    assert "paid" == out.structured_content["status"]
    assert [*result.content] == out.content[:-1]
    assert [
        "resolved invoice:INV-2 payment_status: paid, from billing; "
        "proceed — the value may be acted on"
    ] == [block.text for block in out.content[-1:]]
    assert out.is_error is False
    assert 1 == client.opens
    assert client.closed


async def test_one_client_serves_every_call() -> None:
    client = FakeClient()
    hook = arbitrator(client)
    await asyncio.gather(*(hook("get_status", {"invoice_id": f"I{i}"}, ok()) for i in range(5)))
    assert 1 == client.opens
    assert 5 == len(client.decided)


async def test_error_result_becomes_an_error_claim_never_a_value() -> None:
    client = FakeClient()
    result = CallToolResult(
        content=[TextContent(type="text", text="invoice not found")], is_error=True
    )
    out = await arbitrator(client)("get_status", ARGS, result)
    [claim] = client.decided
    assert "not_found" == claim["status"]
    assert "value" not in claim
    assert out.is_error is True
    assert "resolved" == out.structured_content["claimwatch"]["outcome"]


@pytest.mark.parametrize(
    ("tool", "action", "expected_error"),
    [
        ("get_status", "escalate", False),
        ("get_status_strict", "escalate", True),
        ("get_status_strict", "proceed", False),
        ("get_status_strict", "degrade", False),
    ],
)
async def test_on_escalate(tool: str, action: str, expected_error: bool) -> None:
    other = {"claim_id": "c-other", "source": "replica", "value": "unpaid"}
    client = FakeClient(lambda c: decision(c, "conflict", action=action, others=[other]))
    out = await arbitrator(client)(tool, ARGS, ok())
    assert expected_error == out.is_error
    text = out.content[-1].text
    assert text.startswith("conflict on invoice:INV-2 payment_status: billing says paid, ")
    assert "replica says unpaid" in text


async def test_signed_when_the_mapping_has_a_key() -> None:
    client = FakeClient()
    await arbitrator(client, keys={"get_status": KEY})("get_status", ARGS, ok())
    [claim] = client.decided
    assert "signature" in claim
    assert None is verify(claim, KEY)


async def test_a_result_the_mapping_cannot_attribute_is_returned_unarbitrated() -> None:
    client = FakeClient()
    out = await arbitrator(client)("get_status", {}, ok())
    note = out.structured_content["claimwatch"]
    assert (False, "not_made") == (note["arbitrated"], note["claim"])
    assert "invoice_id" in note["reason"]
    assert [] == client.decided


async def test_worker_down_returns_a_note_and_the_outbox_sends_the_claim() -> None:
    client = FakeClient(lambda c: WorkerUnavailable("no worker at http://127.0.0.1:1"))
    hook = arbitrator(client)
    out = await hook("get_status", ARGS, ok())
    note = out.structured_content["claimwatch"]
    assert (False, "queued") == (note["arbitrated"], note["claim"])
    assert "no worker at http://127.0.0.1:1" == note["reason"]
    assert "status" in out.structured_content  # the result itself is never lost
    await _drained(hook)
    [(key, value)] = client.publisher.sent
    assert (b"invoice:INV-2|payment_status", note["claim_id"]) == (
        key,
        orjson.loads(value)["claim_id"],
    )


@pytest.mark.parametrize(
    ("published", "state", "reason", "resent"),
    [
        (True, "sent", "no decision within the decide timeout (0.2 s); "
         "the worker did not answer in time", 0),
        (False, "queued", "no decision within the decide timeout (0.2 s)", 1),
    ],
)  # fmt: skip
async def test_no_decision_in_time_returns_within_the_timeout(
    published: bool, state: str, reason: str, resent: int
) -> None:
    """A claim the broker took is not sent again; one it did not take goes to the outbox."""

    async def never(_claim: dict[str, Any]) -> None:
        await asyncio.sleep(3600)

    client = FakeClient(never, publishes=published)
    hook = arbitrator(client, timeout=0.2)
    started = time.monotonic()
    out = await hook("get_status", ARGS, ok())
    elapsed = time.monotonic() - started
    assert elapsed < 0.5, elapsed
    note = out.structured_content["claimwatch"]
    assert (False, state, reason) == (note["arbitrated"], note["claim"], note["reason"])
    await _drained(hook)
    assert resent == len(client.publisher.sent)


async def test_refused_claim_is_reported_not_queued() -> None:
    client = FakeClient(lambda c: ClaimRefused("bad signature", {c["claim_id"]: "bad signature"}))
    hook = arbitrator(client)
    out = await hook("get_status", ARGS, ok())
    assert "refused" == out.structured_content["claimwatch"]["claim"]
    assert 0 == len(hook.outbox)


async def test_broker_down_queues_then_sends_when_it_answers() -> None:
    client = FakeClient(broken_open=BrokerUnavailable("no Kafka broker answered at x"))
    hook = arbitrator(client)
    first = await hook("get_status", ARGS, ok())
    started = time.monotonic()
    second = await hook("get_status", {"invoice_id": "INV-3"}, ok())
    assert time.monotonic() - started < 0.1  # a known outage does not make calls wait
    assert "queued" == first.structured_content["claimwatch"]["claim"]
    assert (
        "the broker did not answer at the last try"
        == (second.structured_content["claimwatch"]["reason"])
    )
    assert 2 == len(hook.outbox)
    client.broken_open = None  # the broker is back
    await _drained(hook, seconds=5.0)
    sent = [orjson.loads(v)["subject"] for _k, v in client.publisher.sent]
    assert ["invoice:INV-2", "invoice:INV-3"] == sent


async def test_a_full_outbox_drops_and_says_so() -> None:
    client = FakeClient(broken_open=BrokerUnavailable("no broker"))
    hook = arbitrator(client, outbox=Outbox(1))
    await hook("get_status", ARGS, ok())
    out = await hook("get_status", {"invoice_id": "INV-3"}, ok())
    assert "dropped" == out.structured_content["claimwatch"]["claim"]
    assert 1 == hook.outbox.dropped
    await hook.aclose()


async def _drained(hook: Arbitrator, seconds: float = 2.0) -> None:
    """Wait until the outbox is empty (the background sender did its work)."""
    deadline = time.monotonic() + seconds
    while len(hook.outbox) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert 0 == len(hook.outbox)
    await hook.aclose()
