"""Decisions on arrival on the real broker, with the worker as the README starts it.

A claim asking `"decide": "on_arrival"` is decided at once (not when its 2 s settle window
closes); `Client.decide` asks for it by default and returns well within the window; a later
claim in the window still gets the usual decision when the window closes.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Final

import pytest
from claimwatch.client.client import Client
from claimwatch.client.facts import FactPages
from claimwatch.client.publisher import Publisher

from tests.support.claims import envelope
from tests.support.kafka import (
    REPO,
    TopicReader,
    WorkerProcess,
    Workers,
    ago,
    considered,
    unique,
    wait_for_ticks,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY: Final = REPO / "examples" / "policy.yaml"
FIELD: Final = "payment_status"
#: The example policy's settle window.
SETTLE_S: Final = 2.0


def _claim(cid: str, source: str, value: Any, subject: str, **extra: Any) -> dict[str, Any]:
    return envelope(cid, source, value, subject=subject, field=FIELD, observed_at=ago(0), **extra)


def _listed(decision: dict[str, Any]) -> dict[str, str]:
    return {c["claim_id"]: c["disposition"] for c in decision["claims"]}


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def _example_worker(workers: Workers, bootstrap: str) -> WorkerProcess:
    """A worker on the example policy (settle 2 s), its partition clocks running."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(bootstrap, worker.prefix)
    return worker


async def test_a_claim_asking_for_it_is_decided_on_arrival(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Published with `decide: on_arrival`, the claim's decision is there within ~0.5 s.

    And it is stamped with the clock of its arrival, not with the window's deadline.
    """
    worker = await _example_worker(workers, kafka_bootstrap)
    subject = unique("invoice:early")
    claim = _claim("e-1", "billing-api", "paid", subject, decide="on_arrival")
    async with (
        Publisher(kafka_bootstrap, worker.prefix) as publisher,
        FactPages(worker.url) as pages,
    ):
        await pages.probe()
        started = time.monotonic()
        await publisher.publish(claim)
        await publisher.flush()
        answer = await pages.ask(subject, FIELD, ["e-1"], 10.0)
        took = time.monotonic() - started

    assert answer.covered and answer.decision is not None
    decision = answer.decision
    assert ("resolved", "paid", {"e-1": "won"}) == (
        decision["outcome"],
        decision["value"],
        _listed(decision),
    )
    assert _seconds(decision["decided_at"]) < _seconds(claim["observed_at"]) + SETTLE_S / 2
    assert took < 1.0, f"decided {took:.3f} s after publishing"


async def test_client_decide_returns_well_within_the_window_and_early_false_waits(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """By default `decide` returns at once; with `early=False` it waits for the window."""
    worker = await _example_worker(workers, kafka_bootstrap)
    early_subject, window_subject = unique("invoice:fast"), unique("invoice:slow")
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        started = time.monotonic()
        early = await client.decide(
            [
                _claim("f-1", "billing-api", "paid", early_subject),
                _claim("f-2", "reporting-replica@eu-west-1", "overdue", early_subject),
            ],
            timeout=30,
        )
        early_s = time.monotonic() - started
        started = time.monotonic()
        window = await client.decide(
            [_claim("s-1", "billing-api", "paid", window_subject)], timeout=30, early=False
        )
        window_s = time.monotonic() - started

    decision = early[f"{early_subject}|{FIELD}"]
    assert {"f-1": "won", "f-2": "outranked"} == _listed(decision)
    assert ["on_arrival", "on_arrival"] == [c["decide"] for c in decision["claims"]]
    assert early_s < SETTLE_S / 2, f"early decide took {early_s:.3f} s"
    assert {"s-1": "won"} == _listed(window[f"{window_subject}|{FIELD}"])
    assert "decide" not in window[f"{window_subject}|{FIELD}"]["claims"][0]
    assert window_s >= SETTLE_S, f"window decide took {window_s:.3f} s"


async def test_a_later_claim_in_the_window_gets_the_usual_decision_at_its_close(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Early: resolved on the first claim; the close: the decision over both, sent after."""
    worker = await _example_worker(workers, kafka_bootstrap)
    subject = unique("invoice:later")
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        first = await client.decide([_claim("l-1", "billing-api", "paid", subject)], timeout=30)
        await client.publisher.publish(_claim("l-2", "billing-api", "unpaid", subject))
        await client.publisher.flush()
    key = f"{subject}|{FIELD}"

    def of_fact(records: list[Any]) -> list[dict[str, Any]]:
        decisions = (r.json() for r in records)
        return [d for d in decisions if d["subject"] == subject]

    async with TopicReader(kafka_bootstrap, worker.names.decisions) as reader:
        records = await reader.wait_for(
            lambda read: any("l-2" in considered(d) for d in of_fact(read)), 30, "the close"
        )
    decisions = of_fact(records)

    assert ("resolved", "paid", {"l-1": "won"}) == (
        first[key]["outcome"],
        first[key]["value"],
        _listed(first[key]),
    )
    assert [
        ("resolved", "paid", {"l-1": "won"}),
        ("resolved", "unpaid", {"l-1": "outranked", "l-2": "won"}),
    ] == [(d["outcome"], d["value"], _listed(d)) for d in decisions]
    early, close = decisions
    assert first[key]["decision_id"] == early["decision_id"]
    # the close: settle after the later claim, not on its arrival
    assert _seconds(close["decided_at"]) >= _seconds(early["decided_at"]) + SETTLE_S
