"""The worker as shipped keeps its control surface closed and answers every waiter.

Only reads are open on the web port; stopping an agent takes the admin token; Faust's own
table, router and statistics pages are gone. A waiter whose claim is dead-lettered is
answered at once with the reason (422), and one past the per-fact bound gets 429.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from claimwatch.client.client import Client
from claimwatch.client.facts import ClaimRefused, FactPages, WorkerBusy

from tests.support.claims import envelope
from tests.support.kafka import (
    ADMIN_ENV,
    ADMIN_HEADERS,
    Workers,
    ago,
    unique,
    wait_for_ticks,
)
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

FIELD = "payment_status"
STOP = "/agents/process_claims/stop"


def _claim(cid: str, source: str, value: Any, subject: str) -> dict[str, Any]:
    return envelope(cid, source, value, subject=subject, field=FIELD, observed_at=ago(1))


async def test_only_reads_are_open_and_stopping_an_agent_takes_the_token(
    workers: Workers,
) -> None:
    """Faust's pages 404; a stop without the token, with a wrong one or as a form is 401."""
    worker = await workers.launch(EXAMPLE_POLICY, extra_env=ADMIN_ENV)
    faust_pages = ["/table/", "/table/facts/", "/router/", "/graph/", "/assignment/"]
    statuses = {path: (await worker.get(path))[0] for path in faust_pages}
    reads = {path: (await worker.get(path))[0] for path in ["/health", "/metrics"]}
    refused = [
        await worker.post(STOP),
        await worker.post(STOP, headers={"Authorization": "Bearer not-the-token"}),
        await worker.post(
            STOP,
            headers={
                "Origin": "http://elsewhere.example",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            data=b"token=claimwatch-tests-admin-token",
        ),
    ]
    still = (await worker.get("/health"))[0]
    stopped = await worker.post(STOP, headers=ADMIN_HEADERS)
    health, body = await worker.get("/health")

    assert dict.fromkeys(faust_pages, 404) == statuses
    assert {"/health": 200, "/metrics": 200} == reads
    assert [401, 401, 401] == [status for status, _ in refused]
    assert all("Authorization: Bearer" in json.loads(b)["error"] for _, b in refused)
    assert 200 == still  # nothing was stopped by the refused posts
    assert (200, {"agent": "process_claims", "stopped": True}) == (
        stopped[0],
        json.loads(stopped[1]),
    )
    assert (503, ["agent process_claims is not running"]) == (
        health,
        json.loads(body)["reasons"],
    )


async def test_a_dead_lettered_claim_is_answered_with_its_reason_and_one_too_many_is_429(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """A claim id reused with other content: 422 with the reason; past the fact's bound: 429.

    The reused id is asked for once the worker has read it (before, the decision of the
    claim that first had the id covers it: see docs/operations.md).
    """
    worker = await workers.launch(
        EXAMPLE_POLICY, extra_env=(("CLAIMWATCH_MAX_WAITERS_PER_FACT", "1"),)
    )
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    subject = unique("invoice:refused")
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        first = await client.decide([_claim("x-1", "billing-api", "paid", subject)], timeout=30)
        await client.publisher.publish_many([_claim("x-1", "billing-api", "unpaid", subject)])
    async with FactPages(worker.url) as pages:
        refused = await _refusal(pages, subject, "x-1")
        crowded = unique("invoice:crowded")
        waits = [asyncio.ensure_future(pages.ask(crowded, FIELD, [f"y-{n}"], 3.0)) for n in (1, 2)]
        answers = await asyncio.gather(*waits, return_exceptions=True)

    reason = "claim_id 'x-1' was already used for this fact with other content"
    assert "x-1" in _listed(first[f"{subject}|{FIELD}"])
    assert {"x-1": reason} == refused.refused
    assert f"claim x-1 of {subject}|{FIELD} was dead-lettered: {reason}" == str(refused)
    busy = [a for a in answers if isinstance(a, WorkerBusy)]
    waited = [a for a in answers if not isinstance(a, BaseException)]
    assert (1, [408]) == (len(busy), [a.status for a in waited])
    assert "at most 1 per fact" in str(busy[0])


async def _refusal(pages: FactPages, subject: str, claim_id: str) -> ClaimRefused:
    """The ClaimRefused the fact page answers once the worker has read the refused claim."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            await pages.ask(subject, FIELD, [claim_id])
        except ClaimRefused as refused:
            return refused
        await asyncio.sleep(0.2)
    raise AssertionError(f"{claim_id} was never refused")


def _listed(decision: dict[str, Any]) -> set[str]:
    return {c["claim_id"] for c in decision["claims"]}
