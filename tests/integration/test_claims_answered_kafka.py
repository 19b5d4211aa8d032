"""Every claim is answered and one fact's failure stays with that fact (the worker as shipped)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from claimwatch.wire.topics import TopicNames

from tests.support.claims import envelope
from tests.support.kafka import (
    TopicReader,
    Workers,
    fact_key,
    publish_raw,
    rfc3339,
    unique,
    wait_for_ticks,
)
from tests.support.paths import EXAMPLE_POLICY
from tests.support.poisoned_worker import POISON

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POISONED = (sys.executable, "-m", "tests.support.poisoned_worker")
#: the digit run of issue 40 item 1: about 9 KB, beyond int()'s 4,300 digits
DIGIT_RUN = "total " + "1," * 4400


def summary_claim(run: str, name: str, value: str, observed: datetime) -> dict[str, Any]:
    """A claim of the example policy's `summary` (text) field of document `name`."""
    return envelope(
        f"{run}-{name}-{value[:12]}",
        "user",
        value,
        subject=f"doc:{run}-{name}",
        field="summary",
        observed_at=rfc3339(observed),
    )


def valid_facts(run: str, count: int, observed: datetime) -> list[dict[str, Any]]:
    """`count` ordinary payment_status facts of one billing-api claim each."""
    return [
        envelope(
            f"{run}-ok-{i}",
            "billing-api",
            "paid",
            subject=f"invoice:{run}-{i}",
            observed_at=rfc3339(observed),
        )
        for i in range(count)
    ]


async def send(bootstrap: str, prefix: str, claims: list[dict[str, Any]]) -> None:
    """Publish claims keyed by fact, in order, as a plain producer does."""
    messages = [(fact_key(c).encode(), json.dumps(c).encode()) for c in claims]
    await publish_raw(bootstrap, TopicNames(prefix).claims, messages)


async def decisions_of(
    bootstrap: str, prefix: str, wanted: set[str], timeout: float = 60.0
) -> dict[str, dict[str, Any]]:
    """The latest decision of each wanted fact, once each has one and 3 s passed quietly."""
    async with TopicReader(bootstrap, TopicNames(prefix).decisions) as reader:
        await reader.wait_for(
            lambda records: wanted <= {fact_key(r.json()) for r in records},
            timeout,
            f"decisions of {len(wanted)} facts",
        )
        await reader.drain(idle=3.0, timeout=timeout)
        latest: dict[str, dict[str, Any]] = {}
        for record in sorted(reader.records, key=lambda r: (r.partition, r.offset)):
            latest[fact_key(record.json())] = record.json()
        return latest


async def dead_letters(
    bootstrap: str, prefix: str
) -> list[tuple[bytes | None, dict[str, Any], str]]:
    """(key, JSON value, reason) of every DLQ record."""
    async with TopicReader(bootstrap, TopicNames(prefix).dlq) as reader:
        records = await reader.drain(idle=1.0)
    return [(r.key, json.loads(r.value), r.headers["claimwatch.reason"].decode()) for r in records]


async def test_a_digit_run_beyond_int_limits_is_decided_with_the_rest_of_its_partition(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Issue 40 item 1: the 9 KB digit run is compared like any passage; 40 later facts decide."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    run, now = unique("digits"), datetime.now(UTC)
    poison = [
        summary_claim(run, "p", "total 5 apples", now),
        summary_claim(run, "p", DIGIT_RUN, now),
    ]
    rest = valid_facts(run, 40, now)
    await send(kafka_bootstrap, worker.prefix, [*poison, *rest])
    wanted = {fact_key(c) for c in [*poison, *rest]}
    decided = await decisions_of(kafka_bootstrap, worker.prefix, wanted)
    assert wanted <= set(decided)
    assert {c["claim_id"] for c in poison} == {
        c["claim_id"] for c in decided[fact_key(poison[0])]["claims"]
    }
    assert "rejected" != decided[fact_key(poison[0])]["outcome"]
    assert [] == [
        r
        for _k, _v, r in await dead_letters(kafka_bootstrap, worker.prefix)
        if "internal_error" in r
    ]
    assert 200 == (await worker.get("/health"))[0]


async def test_a_fact_whose_deciding_fails_is_rejected_and_its_partition_goes_on(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """A planted fault: that fact is decided rejected, its claims dead-lettered, the rest decide."""
    worker = await workers.launch(EXAMPLE_POLICY, launcher=POISONED)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    run, now = unique("poison"), datetime.now(UTC)
    poison = [
        summary_claim(run, "p", "total 5 apples", now),
        summary_claim(run, "p", POISON + " total 6 apples", now),
    ]
    rest = valid_facts(run, 40, now)
    await send(kafka_bootstrap, worker.prefix, [*poison, *rest])
    wanted = {fact_key(c) for c in [*poison, *rest]}
    decided = await decisions_of(kafka_bootstrap, worker.prefix, wanted)
    bad = decided.pop(fact_key(poison[0]))
    assert "rejected" == bad["outcome"]
    assert bad["reason"].startswith("internal_error: RuntimeError: planted fault")
    assert {c["claim_id"]: "rejected" for c in poison} == {
        c["claim_id"]: c["disposition"] for c in bad["claims"]
    }
    assert {fact_key(c): "resolved" for c in rest} == {k: d["outcome"] for k, d in decided.items()}
    letters = await dead_letters(kafka_bootstrap, worker.prefix)
    quarantined = {v["claim_id"]: (k, r) for k, v, r in letters if r.startswith("internal_error")}
    key = fact_key(poison[0]).encode()
    assert {c["claim_id"]: (key, bad["reason"]) for c in poison} == quarantined
    assert 200 == (await worker.get("/health"))[0]
    _status, metrics = await worker.get("/metrics")
    assert (
        'claimwatch_quarantined_facts_total{feature="claims",field="summary"} 1.0'
        in metrics.decode()
    )
    assert 1 == worker.log.count("set aside (decided rejected")  # logged once
    assert 1 == worker.log.count("Traceback")


async def test_a_claim_stale_on_arrival_is_decided_stale_and_its_waiter_answered(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Issue 40 item 2: observed 100 s ago on a 60 s field: `insufficient`, listing it `stale`."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    run = unique("late")
    old = envelope(
        f"{run}-1",
        "billing-api",
        "paid",
        subject=f"invoice:{run}",
        observed_at=rfc3339(datetime.now(UTC) - timedelta(seconds=100)),
    )
    await send(kafka_bootstrap, worker.prefix, [old])
    path = f"/facts/invoice:{run}/payment_status?covering={old['claim_id']}&wait=8"
    status, body = await worker.get(path, timeout=15)
    assert 200 == status, body
    decision = json.loads(body)
    assert ("insufficient", "escalate") == (decision["outcome"], decision["action"])
    assert [(old["claim_id"], "stale")] == [
        (c["claim_id"], c["disposition"]) for c in decision["claims"]
    ]


@pytest.mark.parametrize("keyed", [False, True])
async def test_a_lone_claim_without_a_time_is_decided_rejected(
    workers: Workers, kafka_bootstrap: str, keyed: bool
) -> None:
    """Issue 40 item 2: a plain producer's claim without `observed_at` is decided `rejected`."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    run = unique("untimed")
    untimed = envelope(
        f"{run}-1", "billing-api", "paid", subject=f"invoice:{run}", observed_at=None
    )
    key = fact_key(untimed).encode() if keyed else None
    await publish_raw(
        kafka_bootstrap, TopicNames(worker.prefix).claims, [(key, json.dumps(untimed).encode())]
    )
    path = f"/facts/invoice:{run}/payment_status?covering={untimed['claim_id']}&wait=8"
    status, body = await worker.get(path, timeout=15)
    assert 200 == status, body
    decision = json.loads(body)
    assert "rejected" == decision["outcome"]
    assert "missing `observed_at`" in decision["claims"][0]["error"]
