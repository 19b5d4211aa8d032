"""The worker end to end: claims through a real Kafka broker into real worker processes."""

from __future__ import annotations

import asyncio
import random
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.audit.resolve_file import Batch, read_claims, resolve_batch
from claimwatch.client.publisher import Publisher
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.wire.topics import TopicNames, ensure_topics, partition_for

from tests.support.claims import envelope
from tests.support.kafka import (
    REPO,
    Record,
    TopicReader,
    Workers,
    ago,
    decisions_by_fact,
    fact_key,
    offline_resolve,
    publish_claims,
    publish_raw,
    rfc3339,
    summary,
    wait_for_ticks,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

EXAMPLE_POLICY = REPO / "examples" / "policy.yaml"
USD_1250 = {"amount": 1250, "currency": "USD", "minor_units": True}


def has_facts(keys: set[str]) -> Callable[[list[Record]], bool]:
    """A `wait_for` condition: every fact of `keys` has at least one decision."""
    return lambda records: keys <= {r.key.decode() for r in records if r.key}


async def decisions_of(
    bootstrap: str, prefix: str, keys: set[str], timeout: float = 45.0, idle: float = 1.5
) -> dict[str, list[dict[str, Any]]]:
    """Wait until every fact of `keys` is decided, drain `decisions` and group by fact."""
    async with TopicReader(bootstrap, TopicNames(prefix).decisions) as reader:
        await reader.wait_for(has_facts(keys), timeout, f"decisions for {sorted(keys)}")
        await reader.drain(idle=idle)
        return decisions_by_fact(reader.records)


def offline_finals(
    policy: Path, claims: list[dict[str, Any]], finals: dict[str, dict[str, Any]], workdir: Path
) -> dict[str, dict[str, Any]]:
    """`claimwatch resolve --now <decided_at>` per fact, over that fact's claims."""
    by_time: dict[str, list[str]] = {}
    for key, decision in finals.items():
        by_time.setdefault(decision["decided_at"], []).append(key)
    expected: dict[str, dict[str, Any]] = {}
    for now, keys in by_time.items():
        batch = [c for c in claims if fact_key(c) in keys]
        offline = offline_resolve(policy, batch, now, workdir)
        expected.update({key: summary(offline[key]) for key in keys})
    return expected


def nine_cases(t: datetime) -> list[tuple[str, dict[str, Any], bool]]:
    """The nine arbitration fixtures, shifted to wall-clock time: (outcome, claim, publishable).

    The unit fixtures' 09:12:00 is `t`; times after it are moved before it, and the stale
    claim is older than its 60 s budget but within budget + grace (90 s), so it is kept.
    """

    def at(seconds: float) -> str:
        return rfc3339(t + timedelta(seconds=seconds))

    def c(case: int, cid: str, source: str, value: Any = None, **extra: Any) -> dict[str, Any]:
        extra.setdefault("observed_at", at(0))
        extra.setdefault("subject", f"invoice:case-{case}")
        return envelope(f"{case}{cid}", source, value, **extra)

    no_time = c(7, "a", "billing-api", "paid", observed_at=None)
    balance = {"field": "balance"}
    risk = {"field": "risk_score", "subject": "customer:case-5"}
    return [
        ("resolved", c(1, "a", "billing-api", "paid"), True),
        ("insufficient", c(2, "a", "billing-api", "paid", observed_at=at(-70)), True),
        ("resolved", c(3, "a", "billing-api", "paid"), True),
        ("resolved", c(3, "b", "reporting-replica@eu-west-1", "overdue", observed_at=at(-2)), True),
        ("conflict", c(4, "a", "billing-api@us", "paid", lineage="ledger-us"), True),
        ("conflict", c(4, "b", "billing-api@eu", "unpaid", lineage="ledger-eu"), True),
        ("conflict", c(4, "c", "reporting-replica", "paid"), True),
        ("resolved", c(5, "a", "scorer", 0.42, **risk), True),
        ("resolved", c(5, "b", "scorer@b", 0.425, lineage="scorer-b", observed_at=at(-60), **risk),
         True),
        ("resolved", c(6, "a", "billing-api", "paid"), True),
        ("resolved", c(6, "b", "ledger-replica", "paid", observed_at=at(-0.5)), True),
        ("resolved", no_time, False),
        ("resolved", c(7, "b", "reporting-replica", "overdue"), True),
        ("resolved", c(8, "a", "billing-api", USD_1250, **balance), True),
        ("resolved", c(8, "b", "billing-api@eu", {"amount": 11.5, "currency": "EUR"},
                       lineage="ledger-eu", **balance), True),
        ("insufficient", c(9, "a", "billing-api", status="error"), True),
        ("rejected", c(9, "b", "billing-api", subject="invoice:case-9-empty"), False),
    ]  # fmt: skip


async def test_nine_fixture_cases_match_offline_resolve(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The nine fixture cases through Kafka decide exactly as `claimwatch resolve` offline."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    cases = nine_cases(datetime.now(UTC) - timedelta(seconds=1))
    claims = [c for _, c, _ in cases]
    raw = [(fact_key(c).encode(), orjson.dumps(c)) for _, c, ok in cases if not ok]
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:  # started: no gap
        await publish_raw(kafka_bootstrap, worker.names.claims, raw)
        await publisher.publish_many([c for _, c, ok in cases if ok])
    outcomes = {fact_key(c): outcome for outcome, c, _ in cases}

    decided = await decisions_of(kafka_bootstrap, worker.prefix, set(outcomes))
    finals = {key: history[-1] for key, history in decided.items()}

    expected = offline_finals(EXAMPLE_POLICY, claims, finals, tmp_path)
    assert expected == {key: summary(decision) for key, decision in finals.items()}
    assert outcomes == {key: decision["outcome"] for key, decision in finals.items()}
    assert {key: 1 for key in outcomes} == {key: len(h) for key, h in decided.items()}


async def test_bad_input_goes_to_the_dead_letter_topic(
    workers: Workers, kafka_bootstrap: str
) -> None:
    """Malformed, keyless, oversized, contract-breaking and re-used-id claims reach the DLQ."""
    worker = await workers.launch(EXAMPLE_POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    names = worker.names
    key1, key2, key3 = (
        b"invoice:dlq-1|payment_status",
        b"account:dlq-2|balance",
        b"invoice:dlq-3|payment_status",
    )
    around = {"subject": "invoice:dlq-1"}
    before = orjson.dumps(envelope("b-1", "billing-api", "paid", observed_at=ago(1), **around))
    not_json = b'{"claim_id": "b-x", "subject": "invoice:dlq-1", "field": '
    missing = orjson.dumps({k: v for k, v in orjson.loads(before).items() if k != "claim_id"})
    oversized = orjson.dumps(
        envelope("b-big", "billing-api", "paid", observed_at=ago(1), tool="x" * 70_000, **around)
    )
    after = orjson.dumps(envelope("b-2", "reporting-replica", "paid", observed_at=ago(1), **around))
    eur = {"amount": 11.5, "currency": "EUR"}
    euros = orjson.dumps(
        envelope(
            "e-1", "billing-api", eur, subject="account:dlq-2", field="balance", observed_at=ago(1)
        )
    )
    first = orjson.dumps(
        envelope("c-1", "billing-api", "paid", subject="invoice:dlq-3", observed_at=ago(1))
    )
    reused = orjson.dumps(
        envelope("c-1", "billing-api", "unpaid", subject="invoice:dlq-3", observed_at=ago(1))
    )
    messages = [
        (key1, before),
        (key1, not_json),
        (key1, missing),
        (key1, oversized),
        (key1, after),
        (key2, euros),
        (key3, first),
        (key3, first),  # a redelivery: ignored
        (key3, reused),
    ]
    placed = await publish_raw(kafka_bootstrap, names.claims, messages)
    origin = {
        value: (names.claims, *at, key) for (key, value), at in zip(messages, placed, strict=True)
    }

    keys = {k.decode() for k in (key1, key2, key3)}
    decided = await decisions_of(kafka_bootstrap, worker.prefix, keys)
    async with TopicReader(kafka_bootstrap, names.dlq) as reader:
        await reader.wait_for(lambda records: len(records) >= 5, 30.0, "5 dead letters")
        dlq = await reader.drain(idle=1.0)

    fragments = {
        not_json: "not JSON",
        missing: "missing required key `claim_id`",
        oversized: "exceeds the 65536-byte limit",
        euros: "EUR",
        reused: "already used for this fact with other content",
    }
    assert sorted(fragments.values()) == sorted(fragments.get(r.value, repr(r.value)) for r in dlq)
    assert [] == [
        (fragments[r.value], r.headers["claimwatch.reason"].decode())
        for r in dlq
        if fragments[r.value] not in r.headers["claimwatch.reason"].decode()
    ]
    expected_origin = {value: origin[value] for value in fragments}
    actual_origin = {
        r.value: (
            r.headers["claimwatch.topic"].decode(),
            int(r.headers["claimwatch.partition"]),
            int(r.headers["claimwatch.offset"]),
            r.key,
        )
        for r in dlq
    }
    assert expected_origin == actual_origin

    finals = {key: history[-1] for key, history in decided.items()}
    expected = {
        key1.decode(): ("resolved", "paid", ["b-1", "b-2"]),
        key2.decode(): ("rejected", None, ["e-1"]),
        key3.decode(): ("resolved", "paid", ["c-1"]),
    }
    assert expected == {
        key: (d["outcome"], d["value"], sorted(c["claim_id"] for c in d["claims"]))
        for key, d in finals.items()
    }
    assert {"e-1": "rejected"} == {
        c["claim_id"]: c["disposition"] for c in finals[key2.decode()]["claims"]
    }


EXPIRY_POLICY = """\
policy_version: expiry-test
sources:
  monitor: {authority: system_of_record, lineage: monitor}
fields:
  heartbeat: {type: enum, values: [up, down], freshness: 3s, settle: 500ms}
"""


async def test_fact_turns_insufficient_on_ticks_alone(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """With no new claim, the ticks move the clock past the freshness budget: insufficient."""
    policy = write_policy(tmp_path, EXPIRY_POLICY)
    worker = await workers.launch(policy)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    beat = envelope(
        "h-1", "monitor", "up", subject="host:db-1", field="heartbeat", observed_at=ago(1)
    )
    await publish_claims(kafka_bootstrap, worker.prefix, [beat])
    key = fact_key(beat)

    async with TopicReader(kafka_bootstrap, worker.names.decisions) as reader:
        await reader.wait_for(lambda records: len(records) >= 2, 30.0, "two decisions")
        history = decisions_by_fact(await reader.drain(idle=1.0))[key]

    assert [("resolved", "up"), ("insufficient", None)] == [
        (d["outcome"], d["value"]) for d in history
    ]
    stale_at = parse_rfc3339(beat["observed_at"]) + 3_000_000 + 1
    assert format_rfc3339(stale_at) == history[1]["decided_at"]
    expected = [
        summary(offline_resolve(policy, [beat], d["decided_at"], tmp_path)[key]) for d in history
    ]
    assert expected == [summary(d) for d in history]


WINDOW_POLICY = """\
policy_version: windows-test
sources:
  ledger-a: {authority: system_of_record, lineage: ledger-a}
  ledger-b: {authority: system_of_record, lineage: ledger-b}
fields:
  status_windowed: {type: enum, values: [paid, unpaid], freshness: 5m}
  status_instant: {type: enum, values: [paid, unpaid], freshness: 5m, settle: 0s}
"""


async def test_decision_windows_hide_a_change_in_flight(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Two owners asked 300 ms apart around a change: no conflict with settle, one without."""
    worker = await workers.launch(write_policy(tmp_path, WINDOW_POLICY))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    fields = ("status_windowed", "status_instant")
    keys = {f"invoice:w-1|{f}" for f in fields}

    def both(source: str, cid: str, value: str) -> list[dict[str, Any]]:
        return [
            envelope(
                f"{cid}-{f}", source, value, subject="invoice:w-1", field=f, observed_at=ago(1)
            )
            for f in fields
        ]

    def resolved_unpaid_by_both(records: list[Record]) -> bool:
        agreeing = {r.json()["field"] for r in records if r.json()["corroboration"] == 2}
        return agreeing == set(fields)

    def resolved_paid(records: list[Record]) -> bool:
        return 2 <= sum(1 for r in records if r.json()["value"] == "paid")

    async with (
        TopicReader(kafka_bootstrap, worker.names.decisions) as reader,
        Publisher(kafka_bootstrap, worker.prefix) as publisher,
    ):
        await publisher.publish_many(
            both("ledger-a", "a1", "unpaid") + both("ledger-b", "b1", "unpaid")
        )
        await reader.wait_for(resolved_unpaid_by_both, 30.0, "both owners say unpaid")
        await publisher.publish_many(both("ledger-a", "a2", "paid"))
        await asyncio.sleep(0.3)
        await publisher.publish_many(both("ledger-b", "b2", "paid"))
        await reader.wait_for(resolved_paid, 30.0, "both facts resolved paid")
        history = decisions_by_fact(await reader.drain(idle=1.5))

    assert keys == set(history)
    windowed = [(d["outcome"], d["value"]) for d in history["invoice:w-1|status_windowed"]]
    instant = [(d["outcome"], d["value"]) for d in history["invoice:w-1|status_instant"]]
    assert [("resolved", "unpaid"), ("resolved", "paid")] == windowed
    assert [
        ("resolved", "unpaid"),
        ("resolved", "unpaid"),
        ("conflict", None),
        ("resolved", "paid"),
    ] == instant


async def test_two_workers_forward_fact_queries(workers: Workers, kafka_bootstrap: str) -> None:
    """Either of two workers answers any fact (the non-owner forwards); both serve health."""
    first = await workers.launch(EXAMPLE_POLICY)
    second = await workers.launch(EXAMPLE_POLICY, prefix=first.prefix, app_id=first.app_id)
    pair = (first, second)
    subjects: dict[int, str] = {}
    n = 0
    while len(subjects) < 4:
        subject = f"invoice:fwd-{n}"
        subjects.setdefault(partition_for(f"{subject}|payment_status".encode(), 4), subject)
        n += 1
    claims = [
        envelope(f"f-{s}", "billing-api", "paid", subject=s, observed_at=ago(1))
        for s in subjects.values()
    ]
    keys = {fact_key(c) for c in claims}

    await publish_claims(kafka_bootstrap, first.prefix, claims)
    decided = await decisions_of(kafka_bootstrap, first.prefix, keys)
    finals = {key: history[-1] for key, history in decided.items()}

    async def answers() -> tuple[dict[str, list[int]], dict[tuple[str, int], Any]]:
        owners: dict[str, list[int]] = {}
        bodies: dict[tuple[str, int], Any] = {}
        for key in sorted(keys):
            subject, field = key.split("|")
            path = f"/facts/{subject}/{field}"
            for index, worker in enumerate(pair):
                own, _ = await worker.get(path, headers={"X-Claimwatch-Forwarded": "1"})
                if own == 200:
                    owners.setdefault(key, []).append(index)
                status, body = await worker.get(path)
                bodies[(key, index)] = (status, orjson.loads(body) if status == 200 else body)
        return owners, bodies

    expected_bodies = {(key, i): (200, finals[key]) for key in keys for i in (0, 1)}
    deadline = time.monotonic() + 45.0
    owners, bodies = await answers()
    while (bodies != expected_bodies or len(owners) != 4) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        owners, bodies = await answers()

    assert expected_bodies == bodies
    assert {key: 1 for key in keys} == {key: len(owners.get(key, [])) for key in keys}
    assert {0, 1} == {i for found in owners.values() for i in found}  # each owns some facts
    for worker in pair:
        health, _ = await worker.get("/health")
        status, text = await worker.get("/metrics")
        assert (200, 200, True) == (health, status, b"claimwatch_decisions_total" in text)


KILL_POLICY = """\
policy_version: kill-test
defaults: {freshness: 1h}
sources:
  billing-api:       {authority: system_of_record, lineage: ledger}
  billing-eu:        {authority: system_of_record, lineage: ledger-eu}
  ledger-replica:    {authority: cached, lineage: ledger}
  reporting-replica: {authority: derived, lineage: reporting}
  user:              {authority: asserted}
fields:
  payment_status: {type: enum, values: [paid, unpaid, overdue, refunded], freshness: 1h}
"""
KILL_FACTS = 2_000
CLAIMS_PER_FACT = 10


def kill_stream(start: datetime) -> list[dict[str, Any]]:
    """KILL_FACTS facts x CLAIMS_PER_FACT claims, fact by fact, 10 ms of clock per fact."""
    rng = random.Random(20260914)
    sources = ["billing-api", "billing-eu", "ledger-replica", "reporting-replica", "user"]
    values = ["paid", "unpaid", "overdue", "refunded"]
    claims = []
    for i in range(KILL_FACTS):
        for j in range(CLAIMS_PER_FACT):
            status = rng.choices(["ok", "not_found", "error"], [0.85, 0.1, 0.05])[0]
            at = rfc3339(start + timedelta(milliseconds=10 * i + j))
            value = rng.choice(values[: rng.choice([1, 2, 4])]) if status == "ok" else None
            source = rng.choice(sources)
            subject = f"invoice:k-{i}"
            claims.append(
                envelope(f"k{i}-{j}", source, value, subject=subject, status=status, observed_at=at)
            )
    return claims


@pytest.mark.slow
@pytest.mark.parametrize("local_state", ["kept", "lost"])
async def test_worker_killed_mid_stream_recovers(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, local_state: str
) -> None:
    """SIGKILL mid-stream, restart on the same or an empty data directory: offline decisions."""
    policy = write_policy(tmp_path, KILL_POLICY)
    now = datetime.now(UTC)
    span = timedelta(milliseconds=10 * KILL_FACTS)
    claims = kill_stream(now - span - timedelta(seconds=1))
    worker = workers.new(policy)
    await ensure_topics(kafka_bootstrap, worker.names, worker.partitions)
    await publish_claims(kafka_bootstrap, worker.prefix, claims)
    keys = {fact_key(c) for c in claims}
    assert KILL_FACTS * CLAIMS_PER_FACT == len(claims)

    started = time.monotonic()
    await worker.launch()
    async with TopicReader(kafka_bootstrap, worker.names.decisions) as reader:
        await reader.wait_for(lambda records: len(records) >= 300, 90.0, "300 decisions")
        worker.kill(signal.SIGKILL)
        killed = time.monotonic()
        before_kill = len(reader.records)
        if local_state == "lost":
            shutil.rmtree(worker.data_dir)
        worker.extra_env = (("CLAIMWATCH_LOG_LEVEL", "info"),)  # for the catch-up's log line
        await worker.launch()
        ready = time.monotonic()
        await reader.wait_for(has_facts(keys), 240.0, "a decision for every fact")
        records = await reader.drain(idle=2.0)
    done = time.monotonic()

    ids = [r.json()["decision_id"] for r in records]
    duplicates = len(ids) - len(set(ids))
    print(
        f"\nkill test: {len(claims)} claims, {len(records)} decisions read_committed "
        f"({before_kill} seen before SIGKILL), {duplicates} duplicate decision ids; "
        f"killed {killed - started:.1f}s after start, healthy again {ready - killed:.1f}s "
        f"after SIGKILL, idle {done - ready:.1f}s later"
    )

    finals: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    for decision in (r.json() for r in sorted(records, key=lambda r: (r.partition, r.offset))):
        if decision["decision_id"] not in seen:  # consumers drop repeated ids
            seen.add(decision["decision_id"])
            finals[fact_key(decision)] = decision
    outcomes = Counter(d["outcome"] for d in finals.values())
    print(f"kill test: final outcomes {dict(sorted(outcomes.items()))}")
    compiled = load_policy(policy)
    batch = read_claims([orjson.dumps(c) for c in claims], "kill-stream")
    expected = {}
    for key, decision in finals.items():
        subject, field = key.split("|")
        one = Batch(facts={(subject, field): batch.facts[(subject, field)]})
        (offline,) = resolve_batch(one, compiled, parse_rfc3339(decision["decided_at"]))
        expected[key] = (offline["decision_id"], offline["outcome"], offline["value"])
    distinct: dict[str, set[str]] = {}
    for key, decision_id in zip(map(fact_key, map(Record.json, records)), ids, strict=True):
        distinct.setdefault(key, set()).add(decision_id)
    assert {key: 1 for key in keys} == {key: len(found) for key, found in distinct.items()}
    if local_state == "lost":  # a kept store may lack nothing, and then reads nothing
        assert "changelog records of" in worker.log  # the bulk catch-up read the changelogs
    assert expected == {k: (d["decision_id"], d["outcome"], d["value"]) for k, d in finals.items()}
