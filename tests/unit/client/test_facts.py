"""`FactPages.ask` reads every answer of a fact page, from a real HTTP server in the test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from claimwatch.client.facts import (
    Answer,
    ClaimRefused,
    FactPages,
    WorkerBusy,
    WorkerUnavailable,
    fact_path,
)

from tests.support.kafka import free_port

DECISION = {"decision_id": "dec_1", "claims": [{"claim_id": "c1", "disposition": "won"}]}
#: what the test server answers, per subject
REPLIES: dict[str, tuple[int, Any, dict[str, str]]] = {
    "covered": (200, DECISION, {}),
    "none": (404, {"error": "no decision for none|f"}, {}),
    "late": (408, DECISION, {"X-Claimwatch-Missing": "c2"}),
    "never": (408, {"error": "no decision covers c2 yet", "missing": ["c2"]}, {}),
    "bad": (400, {"error": "`wait` must be a number of seconds"}, {}),
    "busy": (503, {"error": "recovering"}, {}),
    "broken": (500, {"error": "boom"}, {}),
    "refused": (
        422,
        {"error": "claim c2 of refused|f was dead-lettered: bad", "refused": {"c2": "bad"}},
        {},
    ),
    "crowded": (
        429,
        {"error": "too many waiting requests", "reason": "crowded"},
        {"Retry-After": "2"},
    ),
}


@contextlib.asynccontextmanager
async def stand_in() -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A stand-in worker on a free port, on the test's own loop: its URL, the queries asked."""
    asked: list[dict[str, str]] = []

    async def page(request: web.Request) -> web.Response:
        asked.append({"path": request.path, **request.query})
        status, body, headers = REPLIES[request.match_info["subject"]]
        return web.json_response(body, status=status, headers=headers)

    app = web.Application()
    app.router.add_get("/facts/{subject}/{field}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}/", asked
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("covered", Answer(200, DECISION, [])),
        ("none", Answer(404, None, ["c1", "c2"])),
        ("late", Answer(408, DECISION, ["c2"])),
        ("never", Answer(408, None, ["c1", "c2"])),
    ],
)
async def test_answers_carry_the_decision_and_the_ids_it_lacks(
    subject: str, expected: Answer
) -> None:
    """200, 404 and 408 are answers; the ids lacking are worked out from the decision."""
    async with stand_in() as (url, asked), FactPages(url) as pages:
        answer = await pages.ask(subject, "f", ["c1", "c2"], wait=45.0)
    assert expected == answer
    assert [{"path": f"/facts/{subject}/f", "covering": "c1,c2", "wait": "30.000"}] == asked


@pytest.mark.parametrize(
    ("subject", "error", "message"),
    [
        ("bad", ValueError, "the worker refused the query: `wait` must be a number of seconds"),
        ("busy", WorkerUnavailable, "the worker at {url} is not ready: recovering"),
        ("broken", WorkerUnavailable, "the worker at {url} answered 500: boom"),
    ],
)
async def test_refusals_and_outages_are_errors_that_say_why(
    subject: str, error: type[Exception], message: str
) -> None:
    """A refused query is a ValueError; a worker not ready or failing is WorkerUnavailable."""
    async with stand_in() as (url, _), FactPages(url) as pages:
        with pytest.raises(error) as caught:
            await pages.ask(subject, "f")
    assert message.format(url=url.rstrip("/")) == str(caught.value)


async def test_a_refused_claim_and_a_crowded_worker_are_errors_naming_the_reason() -> None:
    """422: ClaimRefused with each claim's reason; 429: WorkerBusy with the Retry-After."""
    async with stand_in() as (url, _), FactPages(url) as pages:
        with pytest.raises(ClaimRefused) as refused:
            await pages.ask("refused", "f", ["c1", "c2"], 5.0)
        with pytest.raises(WorkerBusy) as busy:
            await pages.ask("crowded", "f", ["c1"], 5.0)
    assert ("claim c2 of refused|f was dead-lettered: bad", {"c2": "bad"}) == (
        str(refused.value),
        refused.value.refused,
    )
    worker = url.rstrip("/")
    assert (f"the worker at {worker} is busy: too many waiting requests", 2.0) == (
        str(busy.value),
        busy.value.retry_after_s,
    )


async def test_no_worker_at_the_url_is_worker_unavailable() -> None:
    """Nothing listening: WorkerUnavailable naming the URL."""
    port = free_port()
    async with FactPages(f"http://127.0.0.1:{port}") as pages:
        with pytest.raises(WorkerUnavailable) as caught:
            await pages.ask("s", "f", ["c1"], 1.0)
    assert str(caught.value).startswith(f"no worker at http://127.0.0.1:{port} (")
    assert not caught.value.connected


@pytest.mark.parametrize(
    ("subject", "field", "expected"),
    [
        ("invoice:INV-1", "payment_status", "/facts/invoice%3AINV-1/payment_status"),
        ("a/b c", "f", "/facts/a%2Fb%20c/f"),
    ],
)
def test_fact_paths_encode_both_parts(subject: str, field: str, expected: str) -> None:
    """A subject with a slash or a space stays one path segment."""
    assert expected == fact_path(subject, field)
