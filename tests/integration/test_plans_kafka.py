"""Plan blocking on the real broker: plans and decisions in, step statuses on `plans.steps`."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.models.plan import StepStatusRecord
from claimwatch.wire.topics import partition_for

from tests.support.claims import envelope
from tests.support.kafka import (
    Record,
    TopicReader,
    WorkerProcess,
    Workers,
    ago,
    publish_claims,
    publish_raw,
    unique,
    write_policy,
)
from tests.support.policies import billing_policy

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

#: Two owners of payment_status in two regions (separate lineages) can conflict; settle 0
#: decides on every claim.
POLICY = billing_policy("plans-kafka", "paid", "unpaid", "overdue", "refunded")


def payment(
    claim_id: str, subject: str, source: str, value: str, lineage: str, age: float
) -> dict[str, Any]:
    """A payment_status claim in `lineage`, observed `age` seconds ago."""
    return envelope(claim_id, source, value, subject=subject, lineage=lineage, observed_at=ago(age))


def plan(plan_id: str, pay: str, other: str, missing: str) -> tuple[bytes, bytes]:
    """A plan as a (key, value) record: refund reads `pay`, notify `other`, audit `missing`."""
    body = {
        "plan_id": plan_id,
        "steps": [
            {"step_id": "refund", "reads": [pay], "irreversible": True},
            {"step_id": "notify", "reads": [other], "irreversible": False},
            {"step_id": "audit", "reads": [missing], "irreversible": True},
        ],
    }
    return plan_id.encode(), orjson.dumps(body)


def steps(records: list[Record], plan_id: str, step_id: str) -> list[dict[str, Any]]:
    """The statuses of one step, in log order (one plan's records share a partition)."""
    return [
        r.json()
        for r in sorted(records, key=lambda r: (r.partition, r.offset))
        if r.key == plan_id.encode() and r.json()["step_id"] == step_id
    ]


def last_is(plan_id: str, step_id: str, status: str) -> Callable[[list[Record]], bool]:
    """A `wait_for` condition: the step's latest status is `status`."""

    def done(records: list[Record]) -> bool:
        """The step's latest record has the status."""
        seen = steps(records, plan_id, step_id)
        return bool(seen) and seen[-1]["status"] == status

    return done


async def decision_of(bootstrap: str, worker: WorkerProcess, fact: str, outcome: str) -> Any:
    """Wait for the fact's latest decision to have `outcome`; return it."""
    async with TopicReader(bootstrap, worker.names.decisions) as reader:

        def done(records: list[Record]) -> bool:
            """The fact's latest decision has the outcome."""
            mine = [r.json() for r in records if r.key == fact.encode()]
            return bool(mine) and mine[-1]["outcome"] == outcome

        records = await reader.wait_for(done, 60.0, f"{outcome} decision of {fact}")
    return [r.json() for r in records if r.key == fact.encode()][-1]


async def test_conflict_blocks_the_refund_and_its_resolution_frees_only_that_step(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Refund: waiting, blocked by the conflict's id, runnable; notify and audit emitted once."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    run = unique("inv")
    pay, other, missing = (f"{run}-{i}|payment_status" for i in (1, 2, 3))
    plan_id = unique("plan")
    other_claim = payment("o-1", f"{run}-2", "billing-api", "paid", "ledger", 2)
    await publish_claims(kafka_bootstrap, worker.prefix, [other_claim])
    await decision_of(kafka_bootstrap, worker, other, "resolved")
    await publish_raw(kafka_bootstrap, worker.names.plans, [plan(plan_id, pay, other, missing)])
    async with TopicReader(kafka_bootstrap, worker.names.plans_steps) as reader:
        await reader.wait_for(last_is(plan_id, "audit", "waiting"), 60.0, "audit waiting")
        await reader.wait_for(last_is(plan_id, "refund", "waiting"), 60.0, "refund waiting")
        await reader.wait_for(last_is(plan_id, "notify", "runnable"), 60.0, "notify runnable")

        split = [
            payment("p-1", f"{run}-1", "billing-api@us", "paid", "ledger-us", 3),
            payment("p-2", f"{run}-1", "billing-api@eu", "unpaid", "ledger-eu", 2),
        ]
        await publish_claims(kafka_bootstrap, worker.prefix, split)
        conflict = await decision_of(kafka_bootstrap, worker, pay, "conflict")
        await reader.wait_for(last_is(plan_id, "refund", "blocked"), 60.0, "refund blocked")
        blocked = steps(reader.records, plan_id, "refund")[-1]
        assert [conflict["decision_id"]] == blocked["blocking"]

        agree = [payment("p-3", f"{run}-1", "billing-api@eu", "paid", "ledger-eu", 1)]
        await publish_claims(kafka_bootstrap, worker.prefix, agree)
        resolved = await decision_of(kafka_bootstrap, worker, pay, "resolved")
        await reader.wait_for(last_is(plan_id, "refund", "runnable"), 60.0, "refund runnable")
        await reader.drain(idle=2.0)
        records = reader.records

    refund = steps(records, plan_id, "refund")
    assert "waiting" == refund[0]["status"]
    assert resolved["decision_id"] == refund[-1]["facts"][0]["decision_id"]
    assert [] == refund[-1]["blocking"]
    notify, audit = steps(records, plan_id, "notify"), steps(records, plan_id, "audit")
    assert [("runnable", [])] == [(s["status"], s["blocking"]) for s in notify]
    assert [("waiting", [missing])] == [(s["status"], s["waiting"]) for s in audit]
    for record in records:
        StepStatusRecord.model_validate(record.json())


async def test_a_malformed_plan_goes_to_the_dead_letter_topic_and_the_worker_keeps_going(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A plan that is not JSON and one with a bad fact key land in the DLQ; a good one runs."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    plan_id = unique("plan")
    bad_key = orjson.dumps({"plan_id": "bad-2", "steps": [{"step_id": "s", "reads": ["nobar"]}]})
    await publish_raw(
        kafka_bootstrap,
        worker.names.plans,
        [(b"bad-1", b"{not json"), (b"bad-2", bad_key), plan(plan_id, "a|f", "b|f", "c|f")],
    )
    async with TopicReader(kafka_bootstrap, worker.names.dlq) as reader:
        dead = await reader.wait_for(lambda rs: len(rs) >= 2, 60.0, "two dead letters")
    assert [(b"bad-1", b"{not json"), (b"bad-2", bad_key)] == sorted((r.key, r.value) for r in dead)
    for record in dead:
        assert worker.names.plans.encode() == record.headers["claimwatch.topic"]
        assert record.headers["claimwatch.reason"].startswith(b"not a plan:")
    async with TopicReader(kafka_bootstrap, worker.names.plans_steps) as reader:
        await reader.wait_for(lambda rs: len(rs) >= 3, 60.0, "the good plan's statuses")
    assert {"waiting"} == {r.json()["status"] for r in reader.records}


def one_per_partition(make: Callable[[int], str], partitions: int = 4) -> list[str]:
    """Names `make(i)` picked so that the k-th one lands in partition k."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        name = make(i)
        found.setdefault(partition_for(name.encode(), partitions), name)
        i += 1
    return [found[p] for p in range(partitions)]


async def events(worker: WorkerProcess, name: str) -> float:
    """The worker's `claimwatch_stream_events_total` count of one event."""
    status, body = await worker.get("/metrics")
    assert 200 == status
    wanted = f'claimwatch_stream_events_total{{event="{name}"}} '
    lines = [line for line in body.decode().splitlines() if line.startswith(wanted)]
    return float(lines[0].split()[-1]) if lines else 0.0


async def test_two_workers_join_plans_and_facts_across_their_partitions(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Plans and facts on every partition of two workers: a conflict blocks every refund.

    Its resolution frees them all again, and no plan's notify step is emitted twice.
    """
    policy = write_policy(tmp_path, POLICY)
    first = await workers.launch(policy)
    second = await workers.launch(policy, prefix=first.prefix, app_id=first.app_id)
    await first.ready()
    run = unique("inv")
    facts = one_per_partition(lambda i: f"{run}-{i}|payment_status")
    subjects = [f.rpartition("|")[0] for f in facts]
    plan_ids = one_per_partition(lambda i: f"{run}-plan-{i}")
    owners = [payment(f"o-{s}", s, "billing-api", "paid", "ledger", 3) for s in subjects]
    await publish_claims(kafka_bootstrap, first.prefix, owners)
    for fact in facts:
        await decision_of(kafka_bootstrap, first, fact, "resolved")
    bodies = [
        (
            pid.encode(),
            orjson.dumps(
                {
                    "plan_id": pid,
                    "steps": [
                        {"step_id": "refund", "reads": facts},
                        {"step_id": "notify", "reads": [facts[1]], "irreversible": False},
                    ],
                }
            ),
        )
        for pid in plan_ids
    ]
    await publish_raw(kafka_bootstrap, first.names.plans, bodies)

    def every(step_id: str, status: str) -> Callable[[list[Record]], bool]:
        """A `wait_for` condition: the step's latest status is `status` in every plan."""
        return lambda rs: all(last_is(pid, step_id, status)(rs) for pid in plan_ids)

    async with TopicReader(kafka_bootstrap, first.names.plans_steps) as reader:
        await reader.wait_for(every("refund", "runnable"), 90.0, "every refund runnable")
        # each worker judged some of the plans and answered for some of the facts
        for worker in (first, second):
            assert 0 < await events(worker, "plan"), worker.log
            assert 0 < await events(worker, "plan_interest"), worker.log
        split = [payment(f"p-{run}", subjects[0], "billing-api@eu", "unpaid", "ledger-eu", 1)]
        await publish_claims(kafka_bootstrap, first.prefix, split)
        conflict = await decision_of(kafka_bootstrap, first, facts[0], "conflict")
        await reader.wait_for(every("refund", "blocked"), 90.0, "every refund blocked")
        blocked = {pid: steps(reader.records, pid, "refund")[-1]["blocking"] for pid in plan_ids}
        agree = [payment(f"q-{run}", subjects[0], "billing-api@eu", "paid", "ledger-eu", 0.5)]
        await publish_claims(kafka_bootstrap, first.prefix, agree)
        await decision_of(kafka_bootstrap, first, facts[0], "resolved")
        await reader.wait_for(every("refund", "runnable"), 90.0, "every refund runnable again")
        await reader.drain(idle=2.0)
        records = reader.records
    assert {pid: [conflict["decision_id"]] for pid in plan_ids} == blocked
    for pid in plan_ids:
        assert ["runnable"] == [s["status"] for s in steps(records, pid, "notify")]


async def test_plan_state_survives_a_killed_worker(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """After SIGKILL and a restart, a conflict still blocks the refund (state from changelogs).

    The worker is killed after its offsets were committed, so nothing is read again: only the
    recovered tables know the plan and which plans read the fact.
    """
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    run = unique("inv")
    pay, other, missing = (f"{run}-{i}|payment_status" for i in (1, 2, 3))
    plan_id = unique("plan")
    owner = payment("p-1", f"{run}-1", "billing-api", "paid", "ledger", 3)
    await publish_claims(kafka_bootstrap, worker.prefix, [owner])
    await decision_of(kafka_bootstrap, worker, pay, "resolved")
    await publish_raw(kafka_bootstrap, worker.names.plans, [plan(plan_id, pay, other, missing)])
    async with TopicReader(kafka_bootstrap, worker.names.plans_steps) as reader:
        await reader.wait_for(last_is(plan_id, "refund", "runnable"), 60.0, "refund runnable")
        await asyncio.sleep(3.0)  # past the 1 s commit interval
        await worker.restart(signal.SIGKILL)
        assert 0 == await events(worker, "plan")
        split = [payment("p-2", f"{run}-1", "billing-api@eu", "unpaid", "ledger-eu", 1)]
        await publish_claims(kafka_bootstrap, worker.prefix, split)
        conflict = await decision_of(kafka_bootstrap, worker, pay, "conflict")
        await reader.wait_for(last_is(plan_id, "refund", "blocked"), 60.0, "refund blocked")
        blocked = steps(reader.records, plan_id, "refund")[-1]
    assert [conflict["decision_id"]] == blocked["blocking"]
    assert 0 == await events(worker, "plan")
    assert 1 <= await events(worker, "plan_update")


async def test_an_empty_value_deletes_the_plan_and_its_steps_fall_silent(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """After the plan's tombstone, a conflict on the fact it read emits nothing for it."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    run = unique("inv")
    pay, other, missing = (f"{run}-{i}|payment_status" for i in (1, 2, 3))
    plan_id = unique("plan")
    await publish_raw(kafka_bootstrap, worker.names.plans, [plan(plan_id, pay, other, missing)])
    async with TopicReader(kafka_bootstrap, worker.names.plans_steps) as reader:
        await reader.wait_for(last_is(plan_id, "refund", "waiting"), 60.0, "refund waiting")
        await publish_raw(kafka_bootstrap, worker.names.plans, [(plan_id.encode(), b"")])
        deadline = asyncio.get_running_loop().time() + 60.0
        while await events(worker, "plan_removed") < 1:
            assert asyncio.get_running_loop().time() < deadline, worker.log
            await asyncio.sleep(0.3)
        split = [
            payment("p-1", f"{run}-1", "billing-api@us", "paid", "ledger-us", 3),
            payment("p-2", f"{run}-1", "billing-api@eu", "unpaid", "ledger-eu", 2),
        ]
        await publish_claims(kafka_bootstrap, worker.prefix, split)
        await decision_of(kafka_bootstrap, worker, pay, "conflict")
        await reader.drain(idle=3.0)
    assert ["waiting"] == [s["status"] for s in steps(reader.records, plan_id, "refund")]
    assert 3 == await events(worker, "plan_update")  # the answers to its three requests only
