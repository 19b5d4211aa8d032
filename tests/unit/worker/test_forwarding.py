"""A page forwarded to the key's owner: the raw path and query, the answer's headers, bounds.

Two real HTTP servers on the test's loop: the owner, and a front that forwards every
request to it through one shared session, as a worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
import yarl
from aiohttp import web
from claimwatch.worker import forwarding

from tests.support.kafka import free_port

MISSING = {"X-Claimwatch-Missing": "c2", "Retry-After": "3", "X-Internal": "not for you"}


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def owner_and_front(
    owner_url: str | None = None,
) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """The front's URL, and what the owner was asked (raw path, subject, query, headers)."""
    asked: list[dict[str, Any]] = []

    async def page(request: web.Request) -> web.Response:
        asked.append(
            {
                "raw_path": request.raw_path,
                "subject": request.match_info["subject"],
                "query": dict(request.query),
                "forwarded": request.headers.get("X-Claimwatch-Forwarded"),
            }
        )
        if request.match_info["subject"] == "slow":
            await asyncio.sleep(2.0)
        return web.json_response({"error": "not yet"}, status=408, headers=MISSING)

    owner = web.Application()
    owner.router.add_get("/facts/{subject}/{field}", page)
    async with serving(owner) as url, aiohttp.ClientSession() as session:
        app = SimpleNamespace(http_client=session)
        target = owner_url or url

        async def forward(request: web.Request) -> Any:
            return await forwarding._forward(app, target, request)

        front = web.Application()
        front.router.add_get("/{tail:.*}", forward)
        async with serving(front) as front_url:
            yield front_url, asked


async def _get(url: str) -> tuple[int, dict[str, str], Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(yarl.URL(url, encoded=True)) as response,
    ):
        return response.status, dict(response.headers), await response.json()


@pytest.mark.parametrize(
    ("path", "subject"),
    [
        ("/facts/inv%2F1/payment_status", "inv/1"),
        ("/facts/inv%3F1%3Dx/payment_status", "inv?1=x"),
        ("/facts/a%252F%2Fb%20c/payment_status", "a%2F/b c"),
    ],
)
async def test_the_owner_is_asked_the_raw_path_and_query_and_its_headers_come_back(
    path: str, subject: str
) -> None:
    """`%2F` and `%3F` stay in the subject; Missing, Retry-After and Content-Type are kept."""
    query = "?covering=c1%2Cc2,c3&wait=0.5"
    async with owner_and_front() as (front, asked):
        status, headers, body = await _get(front + path + query)
    assert [
        {
            "raw_path": path + query,
            "subject": subject,
            "query": {"covering": "c1,c2,c3", "wait": "0.5"},
            "forwarded": "1",
        }
    ] == asked
    assert (408, {"error": "not yet"}) == (status, body)
    assert "c2" == headers.get("X-Claimwatch-Missing")
    assert "3" == headers.get("Retry-After")
    assert headers.get("Content-Type", "").startswith("application/json")
    assert "X-Internal" not in headers


async def test_an_owner_slower_than_the_wait_plus_the_slack_is_a_504(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The forward waits the request's wait plus the slack, not minutes."""
    monkeypatch.setattr(forwarding, "FORWARD_SLACK_S", 0.2)
    async with owner_and_front() as (front, _asked):
        started = asyncio.get_running_loop().time()
        status, _headers, body = await _get(front + "/facts/slow/f?wait=0.3")
        took = asyncio.get_running_loop().time() - started
    assert 504 == status
    assert "did not answer in 0.5 s" in body["error"]
    assert took < 1.5


async def test_an_unreachable_owner_is_a_503_naming_it() -> None:
    """Nobody at the owner's address: 503 with the reason, no traceback."""
    gone = f"http://127.0.0.1:{free_port()}"
    async with owner_and_front(gone) as (front, _asked):
        status, _headers, body = await _get(front + "/facts/s/f")
    assert 503 == status
    assert body["error"].startswith(f"the worker owning this key ({gone}) is unreachable: ")
