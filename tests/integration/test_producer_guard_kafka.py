"""A record the producer refuses, on the real broker: the worker stays up and keeps deciding.

Issue 40, item 9: a table value over the producer's request limit raised in Faust's
producer buffer task, outside every agent, and the whole process exited (and again after
each restart). The shipped bounds keep every stored value below the default 1 MB limit,
so this test lowers the limit (`CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES`, its only change
to the shipped worker) until an ordinary large plan's stored record, written through
Faust's table and its producer buffer, exceeds it: the refusal is logged, counted and
noted on the DLQ, `/health` stays 200, claims published afterwards are decided, and the plan
hears them.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import orjson
import pytest

from tests.support.claims import envelope
from tests.support.kafka import (
    Record,
    TopicReader,
    Workers,
    ago,
    fact_key,
    publish_raw,
    unique,
    write_policy,
)
from tests.support.policies import billing_policy
from tests.support.probes import publish_until_decided

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = billing_policy("producer-guard", "paid", "unpaid")
#: The producer's limit in this test: above every decision and step status it sends, below
#: the stored record of the plan below (about 190 kB).
LIMIT = 100_000
STEPS, READS = 200, 8


def big_plan(plan_id: str, facts: list[str]) -> bytes:
    """200 steps reading the same 8 facts (100-character keys): ~190 kB, within every bound."""
    steps = [
        {"step_id": f"step-{n:04d}".ljust(100, "s"), "reads": facts, "irreversible": True}
        for n in range(STEPS)
    ]
    return orjson.dumps({"plan_id": plan_id, "steps": steps})


def counter(text: str, name: str, **labels: str) -> float:
    """The sum of the series of `name` whose labels include `labels` (0 when none)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{"):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


def refusals(records: list[Record]) -> list[Record]:
    """The DLQ notes of refused records."""
    reason = "claimwatch.reason"
    return [r for r in records if r.headers.get(reason, b"").startswith(b"producer_refused")]


async def test_a_refused_table_write_leaves_the_worker_up_and_deciding(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A plan's 190 kB stored record under a 100 kB producer limit: reported, survived."""
    worker = await workers.launch(
        write_policy(tmp_path, POLICY),
        extra_env=(("CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES", str(LIMIT)),),
    )
    run = unique("inv")
    facts = [f"{run}-{i}-".ljust(85, "x") + "|payment_status" for i in range(READS)]
    plan_id = unique("big-plan")
    body = big_plan(plan_id, facts)
    assert 150_000 < len(body) < 256 * 1024
    await publish_raw(kafka_bootstrap, worker.names.plans, [(plan_id.encode(), body)])

    async with TopicReader(kafka_bootstrap, worker.names.dlq) as dlq:
        notes = refusals(await dlq.wait_for(lambda rs: bool(refusals(rs)), 60.0, "a note"))
    note = notes[0]
    changelog = note.headers["claimwatch.topic"].decode()
    assert changelog.endswith("plans-changelog"), changelog
    assert b"MessageSizeTooLargeError" in note.headers["claimwatch.reason"]
    assert LIMIT > len(note.key or b"") + len(note.value)
    assert b"true" == note.headers["claimwatch.truncated"]
    assert worker.alive, f"the worker exited:\n{worker.log[-4000:]}"
    assert 200 == await worker.health()
    status, metrics = await worker.get("/metrics")
    assert 200 == status
    refused = counter(metrics.decode(), "claimwatch_producer_errors_total", topic=changelog)
    assert 1.0 <= refused

    # later claims are decided: those of every fact the plan reads, and one it does not
    later = [
        envelope(unique("c"), "billing-api", "paid", subject=f.split("|")[0], observed_at=ago(1))
        for f in [*facts, f"{run}-other|payment_status"]
    ]
    seen = await publish_until_decided(kafka_bootstrap, worker, later, "the later claims decided")
    wanted = {fact_key(c) for c in later}
    outcomes = {fact_key(r.json()): r.json()["outcome"] for r in seen}
    assert {"resolved"} == {outcomes[k] for k in wanted}
    # and the plan, whose stored record the producer refuses, hears them: every step is
    # judged again once its last fact is decided (a step re-emits when its status or its
    # blocking decisions change, not when one of several facts it waits for is decided)
    async with TopicReader(kafka_bootstrap, worker.names.plans_steps) as steps:

        def judged(records: list[Record]) -> bool:
            latest = {r.json()["step_id"]: r.json() for r in records}
            return STEPS == len(latest) and all(
                "runnable" == s["status"] and [] == s["waiting"] for s in latest.values()
            )

        await steps.wait_for(judged, 60.0, "every step judged on its decided facts")
    await asyncio.sleep(1.0)
    assert worker.alive and 200 == await worker.health()
