"""An agent waits for its decision: `?covering=&wait=`, `Client.decide` and `claimwatch ask`."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from claimwatch.client.client import Client
from claimwatch.client.facts import ClaimRefused, FactPages, fact_path
from claimwatch.wire.topics import partition_for

from tests.support.claims import envelope
from tests.support.kafka import (
    CLAIMWATCH,
    REPO,
    WorkerProcess,
    Workers,
    ago,
    unique,
    wait_for_ticks,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"
FIELD = "payment_status"


def _claim(cid: str, source: str, value: Any, subject: str, **extra: Any) -> dict[str, Any]:
    return envelope(cid, source, value, subject=subject, field=FIELD, observed_at=ago(1), **extra)


def _listed(decision: dict[str, Any]) -> dict[str, str]:
    return {c["claim_id"]: c["disposition"] for c in decision["claims"]}


async def _example_worker(workers: Workers, bootstrap: str) -> WorkerProcess:
    """A worker on the example policy, its partition clocks running."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(bootstrap, worker.prefix)
    return worker


async def test_decide_waits_for_the_window_and_returns_the_decision_covering_the_claims(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """`early=False`: a fact in its 2 s settle window is answered when it closes."""
    worker = await _example_worker(workers, kafka_bootstrap)
    subject = unique("invoice:decide")
    first = [
        _claim("d-1", "billing-api", "paid", subject),
        _claim("d-2", "ledger-replica", "unpaid", subject),
    ]
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        started = time.monotonic()
        decided = await client.decide(first, timeout=30, early=False)
        waited = time.monotonic() - started
        later = await client.decide(
            [_claim("d-3", "ledger-replica", "paid", subject)], timeout=30, early=False
        )

    key = f"{subject}|{FIELD}"
    assert [key] == list(decided)
    assert {"d-1": "won", "d-2": "outranked"} == _listed(decided[key])
    assert ("resolved", "paid") == (decided[key]["outcome"], decided[key]["value"])
    assert waited >= 1.5  # the settle window (2 s from the last claim) was waited for
    # the second answer is not the decision already standing: it lists the new claim
    assert {"d-1", "d-2", "d-3"} == set(_listed(later[key]))
    assert decided[key]["decision_id"] != later[key]["decision_id"]


async def test_decide_returns_the_decision_that_rejected_a_claim(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """A claim the policy rejects is covered too: the decision lists it as rejected."""
    worker = await _example_worker(workers, kafka_bootstrap)
    subject = unique("invoice:reject")
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        decided = await client.decide(
            [_claim("r-1", "billing-api", "settled-ish", subject)], timeout=30
        )
    decision = decided[f"{subject}|{FIELD}"]
    assert {"r-1": "rejected"} == _listed(decision)
    assert "rejected" == decision["outcome"]


async def test_any_worker_answers_covering_by_forwarding_the_query_to_the_owner(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Asked of the worker that does not own the fact, `covering` and `wait` still hold.

    The subjects hold `/` and `?` (sent as %2F and %3F): the forward keeps them in the path.
    """
    first = await workers.launch(EXAMPLE_POLICY)
    second = await workers.launch(EXAMPLE_POLICY, prefix=first.prefix, app_id=first.app_id)
    await wait_for_ticks(kafka_bootstrap, first.prefix)
    subjects: dict[int, str] = {}
    n = 0
    while len(subjects) < 4:  # a fact on every partition: each worker owns some
        subject = unique(f"invoice:fwd/{n}?x=")
        subjects.setdefault(partition_for(f"{subject}|{FIELD}".encode(), 4), subject)
        n += 1
    async with Client(first.url, kafka_bootstrap, first.prefix) as client:
        await client.decide([_claim(f"a-{s}", "billing-api", "paid", s) for s in subjects.values()])
        statuses: dict[tuple[str, int], Any] = {}
        missing_headers: dict[tuple[str, int], str | None] = {}
        for subject in subjects.values():
            for index, worker in enumerate((first, second)):
                async with FactPages(worker.url) as pages:
                    answer = await _settled(pages, subject, [f"b-{subject}"], 1.0)
                statuses[(subject, index)] = (answer.status, answer.missing)
                missing_headers[(subject, index)] = await _missing_header(
                    worker.url, subject, f"b-{subject}"
                )
        later = [_claim(f"b-{s}", "ledger-replica", "paid", s) for s in subjects.values()]
        await client.publisher.publish_many(later)
        covered: dict[tuple[str, int], Any] = {}
        for subject in subjects.values():
            for index, worker in enumerate((first, second)):
                async with FactPages(worker.url) as pages:
                    answer = await _settled(pages, subject, [f"b-{subject}"], 20.0)
                assert answer.decision is not None
                covered[(subject, index)] = (
                    answer.status,
                    f"b-{subject}" in _listed(answer.decision),
                )

    keys = [(s, i) for s in subjects.values() for i in (0, 1)]
    assert {k: (408, [f"b-{k[0]}"]) for k in keys} == statuses
    assert {k: f"b-{k[0]}" for k in keys} == missing_headers
    assert {k: (200, True) for k in keys} == covered


async def _missing_header(url: str, subject: str, claim_id: str) -> str | None:
    """The X-Claimwatch-Missing header of a 408 fact page, asked of the worker at `url`."""
    page = url + fact_path(subject, FIELD) + f"?covering={claim_id}&wait=0.5"
    async with aiohttp.ClientSession() as session, session.get(page) as response:
        assert 408 == response.status, await response.text()
        return response.headers.get("X-Claimwatch-Missing")


async def _settled(pages: FactPages, subject: str, ids: list[str], wait: float) -> Any:
    """The answer once the workers agree who owns the fact (a 503 while they rebalance)."""
    deadline = time.monotonic() + 60.0
    while True:
        try:
            return await pages.ask(subject, FIELD, ids, wait)
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def _ask(*args: str) -> subprocess.CompletedProcess[str]:
    command = [str(CLAIMWATCH), "ask", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


async def test_claimwatch_ask_prints_the_covering_decision_or_says_what_is_missing(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """`ask --covering --wait` explains the decision (0), or exits 1 naming the missing ids."""
    worker = await _example_worker(workers, kafka_bootstrap)
    subject = unique("invoice:ask")
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        await client.publisher.publish_many([_claim("k-1", "billing-api", "paid", subject)])
    url = ("--worker-url", worker.url)
    covered = await asyncio.to_thread(
        _ask, subject, FIELD, "--covering", "k-1", "--wait", "20", *url
    )
    as_json = await asyncio.to_thread(_ask, subject, FIELD, "--json", *url)
    lacking = await asyncio.to_thread(_ask, subject, FIELD, "--covering", "k-1,k-9", *url)
    unknown = await asyncio.to_thread(_ask, unique("invoice:none"), FIELD, *url)

    assert (0, "") == (covered.returncode, covered.stderr)
    first_line = covered.stdout.splitlines()[0]
    assert first_line.startswith("Decision dec_") and f" on {subject} {FIELD} at " in first_line
    assert '"paid"' in covered.stdout and "Action: proceed" in covered.stdout
    assert 0 == as_json.returncode and '"claim_id": "k-1"' in as_json.stdout
    assert 1 == lacking.returncode
    assert f"claimwatch: no decision for {subject}|{FIELD} lists k-9\n" == lacking.stderr
    assert 1 == unknown.returncode and unknown.stderr.startswith("claimwatch: no decision for ")


#: the signing key of SIGNED_POLICY's ledger (at least 32 bytes, as every policy key)
DECIDE_KEY = b"decide-key-of-at-least-32-bytes!"
SIGNED_POLICY = """\
policy_version: decide-signed-1
defaults: {settle: 0s}
sources:
  ledger: {authority: system_of_record, lineage: ledger}
fields:
  payment_status: {type: enum, values: [paid, unpaid], freshness: 5m}
signing:
  ledger: {env: CW_IT_DECIDE_KEY}
"""


async def test_decide_signs_the_claims_when_given_the_sources_key(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source that must sign: signed claims are decided, an unsigned one refused at once."""
    monkeypatch.setenv("CW_IT_DECIDE_KEY", DECIDE_KEY.decode())  # the worker inherits it
    worker = await workers.launch(write_policy(tmp_path, SIGNED_POLICY))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    subject = unique("invoice:signed")
    url, prefix = worker.url, worker.prefix
    async with Client(url, kafka_bootstrap, prefix, signing_key=DECIDE_KEY) as client:
        decided = await client.decide([_claim("s-1", "ledger", "paid", subject)], timeout=30)
    async with Client(url, kafka_bootstrap, prefix) as client:
        started = time.monotonic()
        with pytest.raises(ClaimRefused) as caught:
            await client.decide([_claim("s-2", "ledger", "unpaid", unique("inv"))], timeout=30)
        took = time.monotonic() - started
    decision = decided[f"{subject}|{FIELD}"]
    assert ({"s-1": "won"}, "paid") == (_listed(decision), decision["value"])
    assert ["s-2"] == list(caught.value.refused)
    assert caught.value.refused["s-2"].startswith("bad_signature: ")
    assert "s-2" in str(caught.value) and "bad_signature" in str(caught.value)
    assert took < 10  # answered at once, never waited out
