"""claimwatch's own tools, against a stand-in worker page (aiohttp) and conflicts records."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from claimwatch.gateway.config import GatewaySettings
from claimwatch.gateway.open_conflicts import OpenConflicts
from claimwatch.gateway.own_tools import _conflicts_text, own_tools
from claimwatch.gateway.routing import OwnTool

from tests.support.gateway_fakes import decision

CLAIM = {
    "claim_id": "c-000001",
    "subject": "invoice:INV-2",
    "field": "payment_status",
    "source": "billing",
    "value": "paid",
}
RECORD = {
    **decision(CLAIM, "resolved"),
    "policy_version": "p1",
    "decided_at": "2026-09-14T09:12:00Z",
    "corroboration": 1,
    "alternatives": [],
}
RECORD["claims"][0].update({"authority": "system_of_record", "observed_at": "2026-09-14T09:11:00Z"})


def tool(name: str, settings: GatewaySettings) -> OwnTool:
    """Claimwatch's own tool `name`, asking the worker `settings` names."""
    return {t.name: t for t in own_tools(settings)}[name]


@contextlib.asynccontextmanager
async def stand_in_worker() -> AsyncIterator[str]:
    """A worker's fact page that knows invoice:INV-2 only (started on the test's loop)."""

    async def fact(request: web.Request) -> web.Response:
        if request.match_info["subject"] == "invoice:INV-2":
            return web.json_response(RECORD)
        return web.json_response({"error": "no decision"}, status=404)

    app = web.Application()
    app.router.add_get("/facts/{subject}/{field}", fact)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield str(server.make_url("")).rstrip("/")
    await server.close()


def test_the_tools_and_their_schemas() -> None:
    tools = {t.name: t for t in own_tools(GatewaySettings())}
    assert ["claimwatch_decision", "claimwatch_explain", "claimwatch_conflicts"] == list(tools)
    assert ["subject", "field"] == tools["claimwatch_decision"].input_schema["required"]
    assert ["field"] == tools["claimwatch_conflicts"].input_schema["required"]


async def test_decision() -> None:
    async with stand_in_worker() as worker:
        out = await tool("claimwatch_decision", GatewaySettings(worker_url=worker)).call(
            {"subject": "invoice:INV-2", "field": "payment_status"},
        )
    assert out.is_error is False
    assert ("resolved", "paid", True) == (
        out.structured_content["outcome"],
        out.structured_content["value"],
        out.structured_content["found"],
    )
    assert [
        "resolved invoice:INV-2 payment_status: paid, from billing; "
        "proceed — the value may be acted on"
    ] == [block.text for block in out.content]


async def test_no_decision() -> None:
    async with stand_in_worker() as worker:
        out = await tool("claimwatch_explain", GatewaySettings(worker_url=worker)).call(
            {"subject": "invoice:INV-9", "field": "payment_status"},
        )
    assert (False, False) == (out.is_error, out.structured_content["found"])
    assert (
        "no decision on invoice:INV-9 payment_status: no claim about it yet" == out.content[0].text
    )


async def test_explain() -> None:
    async with stand_in_worker() as worker:
        out = await tool("claimwatch_explain", GatewaySettings(worker_url=worker)).call(
            {"subject": "invoice:INV-2", "field": "payment_status"},
        )
    assert out.content[0].text.startswith(
        "Decision d-000001 on invoice:INV-2 payment_status at 2026-09-14T09:12:00Z"
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"subject": "s"}, "invalid arguments: `field` must be a non-empty string"),
        ({"subject": "s", "field": 3}, "invalid arguments: `field` must be a non-empty string"),
        ({"subject": "s", "field": "f", "x": 1}, "invalid arguments: unknown argument(s): x"),
    ],
)
async def test_bad_arguments_are_error_results(arguments: dict[str, Any], expected: str) -> None:
    out = await tool("claimwatch_decision", GatewaySettings()).call(arguments)
    assert (True, expected) == (out.is_error, out.content[0].text)


async def test_worker_down_is_an_error_result() -> None:
    out = await tool("claimwatch_decision", GatewaySettings(worker_url="http://127.0.0.1:9")).call(
        {"subject": "s", "field": "f"}
    )
    assert out.is_error is True
    assert out.content[0].text.startswith("no worker at http://127.0.0.1:9")


def test_open_conflicts_keep_each_facts_latest_record() -> None:
    found = OpenConflicts("balance")
    a = {"event": "entered", "subject": "A", "field": "balance", "competing": []}
    for record in [
        a,
        {"event": "entered", "subject": "B", "field": "balance", "competing": []},
        {"event": "entered", "subject": "C", "field": "other"},
        {"event": "left", "subject": "B", "field": "balance"},
        "not json",
    ]:
        found.add(record)
    assert ({"A": a}, 5) == (found.open, found.records_read)


@pytest.mark.parametrize(
    ("conflicts", "complete", "expected"),
    [
        ([], True, "no conflict open on balance"),
        ([], False, "no conflict open on balance (the read stopped early: there may be more)"),
        (
            [
                {
                    "subject": "invoice:INV-2",
                    "competing": [
                        {
                            "source": "a",
                            "value": {"amount": "1.00", "currency": "USD"},
                            "exists": True,
                        },
                        {"source": "b", "value": None, "exists": False},
                    ],
                }
            ],
            True,
            "1 conflict(s) open on balance: invoice:INV-2 (a says 1.00 USD, b says not found)",
        ),
    ],
)
def test_conflicts_text(conflicts: list[Any], complete: bool, expected: str) -> None:
    answer = {"field": "balance", "conflicts": conflicts, "complete": complete}
    assert expected == _conflicts_text(answer)
