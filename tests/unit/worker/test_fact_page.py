"""The fact page's answers to a waiting request: the decision, 408, 422 at once, 429."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import orjson
from claimwatch.worker.claims.agents import _fact_answer
from claimwatch.worker.claims.waiting import Waiters

KEY = b"invoice:1|payment_status"


class Web:
    """The part of Faust's web the page uses: a JSON answer, kept as (status, body, headers)."""

    def json(
        self, value: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        return status, value, dict(headers or {})


def _pipe(current: dict[str, Any] | None = None) -> Any:
    table = {KEY: orjson.dumps(current)} if current is not None else {}
    return SimpleNamespace(resolutions=table)


def _decision(*ids: str) -> dict[str, Any]:
    return {"decision_id": "dec_" + "".join(ids), "claims": [{"claim_id": i} for i in ids]}


async def test_a_refused_claim_is_a_422_with_the_reason_at_once() -> None:
    """Refused before the request, or while it waits: 422 naming the claim and the reason."""
    waiters = Waiters(10, 10)
    waiting = asyncio.ensure_future(_fact_answer(Web(), _pipe(), waiters, KEY, ("c1",), 30.0))
    await asyncio.sleep(0)
    waiters.refuse(KEY, "c1", "bad_signature: no `signature`")
    during = await asyncio.wait_for(waiting, 1.0)
    after = await _fact_answer(Web(), _pipe(_decision("c1")), waiters, KEY, ("c1",), 0.0)
    error = f"claim c1 of {KEY.decode()} was dead-lettered: bad_signature: no `signature`"
    expected = (422, {"error": error, "refused": {"c1": "bad_signature: no `signature`"}}, {})
    assert [expected, expected] == [during, after]


async def test_one_waiter_past_the_facts_bound_is_a_429_with_retry_after() -> None:
    """The fact holds as many waiters as it takes: the next gets 429, Retry-After and why."""
    waiters = Waiters(10, 1)
    first = asyncio.ensure_future(_fact_answer(Web(), _pipe(), waiters, KEY, ("c1",), 30.0))
    await asyncio.sleep(0)
    status, body, headers = await _fact_answer(Web(), _pipe(), waiters, KEY, ("c2",), 30.0)
    waiters.offer(KEY, _decision("c1"))
    assert (200, _decision("c1")) == (await first)[:2]
    assert (429, "crowded", {"Retry-After": "1"}) == (status, body["reason"], headers)
    assert f"1 requests wait for {KEY.decode()} (at most 1 per fact)" in body["error"]


async def test_a_request_without_wait_is_never_counted_against_the_bound() -> None:
    """No wait: the current state at once (408 with what is missing), whatever the bound."""
    waiters = Waiters(0, 0)
    status, body, headers = await _fact_answer(
        Web(), _pipe(_decision("c1")), waiters, KEY, ("c1", "c2"), 0.0
    )
    assert (408, _decision("c1"), {"X-Claimwatch-Missing": "c2"}) == (status, body, headers)
