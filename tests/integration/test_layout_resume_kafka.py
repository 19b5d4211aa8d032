"""A package-layout worker resumes the state and offsets a flat-layout (69a5a16) worker left."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from streams.wire.topics import TopicNames
from streams.worker.edge import TICK_KEY
from tests.support.claims import envelope
from tests.support.kafka import (
    REPO,
    Record,
    TopicReader,
    WorkerProcess,
    Workers,
    considered,
    fact_key,
    offline_resolve,
    publish_claims,
    rfc3339,
    summary,
    unique,
)
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = EXAMPLE_POLICY
#: `git archive 69a5a16 streams | gzip -9 > tests/fixtures/layout_69a5a16.tar.gz`: the flat
#: layout's `streams/` (the last commit before 7bf212a), so that no git history is needed
OLD_LAYOUT = REPO / "tests" / "fixtures" / "layout_69a5a16.tar.gz"
#: `-P`: no working directory on sys.path, so the repository's own streams/ (the harness runs
#: workers in it) does not shadow the old tree that PYTHONPATH puts first
OLD_LAUNCHER = (sys.executable, "-P", "-c", "from streams.cli import main; main()")
TIMEOUT = 60.0
OLD_FACTS = 40
NEW_FACTS = 5


def extract_old_layout(into: Path) -> Path:
    """The fixture's `streams/` tree extracted under `into`; the directory for PYTHONPATH."""
    with tarfile.open(OLD_LAYOUT) as archive:
        archive.extractall(into, filter="data")
    assert (into / "streams" / "runtime.py").is_file()
    assert not (into / "streams" / "worker").exists()
    return into


def old_env(root: Path) -> tuple[tuple[str, str], ...]:
    """The environment that makes the old tree's `streams` the one imported (and cached)."""
    # an empty PYTHONDONTWRITEBYTECODE is unset: the bytecode cache shows what was imported
    return (("PYTHONPATH", str(root)), ("PYTHONDONTWRITEBYTECODE", ""))


def imported_from(root: Path) -> str:
    """`streams.__file__` as the old worker's interpreter, directory and environment see it."""
    env = {**os.environ, **dict(old_env(root))}
    proc = subprocess.run(
        [*OLD_LAUNCHER[:2], "-c", "import streams; print(streams.__file__)"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return proc.stdout.strip()


def price(amount: str) -> dict[str, str]:
    """A unit_price value (the field's currency)."""
    return {"amount": amount, "currency": "EUR"}


def unit_price(subject: str, at: datetime) -> dict[str, str]:
    """The envelope keys of a unit_price fact observed at `at` (freshness 5m: none goes stale)."""
    return {"subject": subject, "field": "unit_price", "observed_at": rfc3339(at)}


def first_batch(run: str, at: datetime) -> list[dict[str, Any]]:
    """Three claims on each of OLD_FACTS facts; every fourth fact has two ledgers disagreeing."""
    claims = []
    for i in range(OLD_FACTS):
        fact = unit_price(f"unit:{run}-{i}", at)
        if i % 4 == 0:
            claims += [
                envelope(
                    f"{run}-{i}-us",
                    "billing-api@us-east-1",
                    price("10.00"),
                    lineage="ledger-us",
                    **fact,
                ),
                envelope(
                    f"{run}-{i}-eu",
                    "billing-api@eu-west-1",
                    price("12.00"),
                    lineage="ledger-eu",
                    **fact,
                ),
            ]
        else:
            claims.append(envelope(f"{run}-{i}-bill", "billing-api", price(f"{10 + i}.00"), **fact))
        other = f"{10 + i}.00" if i % 3 else "99.00"
        claims.append(envelope(f"{run}-{i}-report", "reporting-replica", price(other), **fact))
        if i % 4:
            claims.append(envelope(f"{run}-{i}-user", "user", price(f"{10 + i}.00"), **fact))
    return claims


def second_batch(run: str, at: datetime) -> list[dict[str, Any]]:
    """New sources on every old fact (a disagreeing user on some) and NEW_FACTS new facts."""
    claims = []
    for i in range(OLD_FACTS):
        fact = unit_price(f"unit:{run}-{i}", at)
        claims.append(
            envelope(f"{run}-{i}-replica", "ledger-replica", price(f"{10 + i}.00"), **fact)
        )
        if i % 5 == 0:
            claims.append(envelope(f"{run}-{i}-user2", "user", price("1.00"), **fact))
    for j in range(NEW_FACTS):
        fact = unit_price(f"unit:{run}-new-{j}", at)
        claims.append(envelope(f"{run}-new-{j}-bill", "billing-api", price("5.00"), **fact))
        claims.append(envelope(f"{run}-new-{j}-report", "reporting-replica", price("6.00"), **fact))
    return claims


def ids_by_fact(claims: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """The claim ids of `claims` by fact key."""
    grouped: dict[str, set[str]] = {}
    for c in claims:
        grouped.setdefault(fact_key(c), set()).add(c["claim_id"])
    return grouped


async def decided(reader: TopicReader, wanted: Mapping[str, set[str]], what: str) -> None:
    """Wait until every wanted fact has a decision over exactly its wanted claims, then idle."""

    def done(records: list[Record]) -> bool:
        seen = {(fact_key(d), frozenset(considered(d))) for d in (r.json() for r in records)}
        return all((key, frozenset(ids)) in seen for key, ids in wanted.items())

    await reader.wait_for(done, TIMEOUT, what)
    await reader.drain(idle=2.0, timeout=TIMEOUT)


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The offsets `group` committed on `topic`, by partition."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


async def claim_records(bootstrap: str, prefix: str) -> list[Record]:
    """Every record of the claims topic (ticks included), read from the beginning."""
    async with TopicReader(bootstrap, TopicNames(prefix).claims) as reader:
        return await reader.drain(idle=1.0, timeout=TIMEOUT)


async def stream_events(worker: WorkerProcess) -> dict[str, float]:
    """The worker's claimwatch_stream_events_total by event."""
    status, body = await worker.get("/metrics")
    assert 200 == status, body
    head = 'claimwatch_stream_events_total{event="'
    return {
        line[len(head) :].split('"', 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in body.decode().splitlines()
        if line.startswith(head)
    }


async def test_package_layout_worker_resumes_what_the_flat_layout_worker_left(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Old worker decides batch 1; the new one, same ids, decides batch 2 over both, no replay."""
    root = extract_old_layout(tmp_path / "layout-69a5a16")
    assert str(root / "streams" / "__init__.py") == imported_from(root)
    runtime_pyc = Path(importlib.util.cache_from_source(str(root / "streams" / "runtime.py")))
    assert not runtime_pyc.exists()

    old = workers.new(POLICY, extra_env=old_env(root), launcher=OLD_LAUNCHER)
    await old.launch()
    assert runtime_pyc.is_file(), "the old worker did not import the old tree's streams.runtime"
    run = unique("layout")
    batch1 = first_batch(run, datetime.now(UTC) - timedelta(seconds=1))
    wanted1 = ids_by_fact(batch1)
    async with TopicReader(kafka_bootstrap, TopicNames(old.prefix).decisions) as reader:
        await publish_claims(kafka_bootstrap, old.prefix, batch1)
        await decided(reader, wanted1, "phase 1: a decision over every fact's claims")
        assert len(batch1) == (await stream_events(old)).get("accepted")
        assert 0 == old.kill(signal.SIGTERM)
        await reader.drain(idle=1.0, timeout=TIMEOUT)
        phase1 = [r.json() for r in reader.records]
        seen1 = len(reader.records)

        names = TopicNames(old.prefix)
        committed = await committed_offsets(kafka_bootstrap, old.app_id, names.claims)
        before = await claim_records(kafka_bootstrap, old.prefix)
        ends: dict[int, int] = {}
        for record in before:
            ends[record.partition] = max(ends.get(record.partition, 0), record.offset + 1)
        partition_of = {r.key.decode(): r.partition for r in before if r.key and r.key != TICK_KEY}
        assert set(wanted1) <= set(partition_of)
        assert all(committed.get(p, 0) > 0 for p in set(partition_of.values())), committed

        new = workers.new(
            POLICY,
            prefix=old.prefix,
            app_id=old.app_id,
            web_port=old.web_port,
            data_dir=old.data_dir,
        )
        await new.launch()
        batch2 = second_batch(run, datetime.now(UTC) - timedelta(seconds=1))
        wanted2 = {key: wanted1.get(key, set()) | ids for key, ids in ids_by_fact(batch2).items()}
        await publish_claims(kafka_bootstrap, new.prefix, batch2)
        await decided(reader, wanted2, "phase 2: a decision over every fact's claims of both")
        phase2 = [r.json() for r in reader.records[seen1:]]
        events = await stream_events(new)
    assert 0 == new.kill(signal.SIGTERM)
    after = await claim_records(kafka_bootstrap, new.prefix)  # (its ticks stopped with it)

    # (a) every fact, old and new, has a decision of the new worker over all its claims
    latest = {fact_key(d): d for d in phase2}
    assert set(wanted2) == set(latest)
    assert wanted2 == {k: considered(d) for k, d in latest.items()}
    # (b) the old facts' new decisions weigh the old worker's claims: its state carried over,
    # and they are the decisions `claimwatch resolve` makes from both batches
    assert {k: True for k in wanted1} == {k: wanted1[k] <= considered(latest[k]) for k in wanted1}
    now = rfc3339(datetime.now(UTC))
    offline = offline_resolve(POLICY, [*batch1, *batch2], now, tmp_path / "offline")
    assert {k: summary(offline[k]) for k in latest} == {k: summary(d) for k, d in latest.items()}

    # (c) the new worker resumed at the committed offsets, not at zero: it accepted exactly the
    # second batch, and counted as duplicates no more records than it could have been
    # redelivered (those at or past the committed offsets, but the first copy of batch 2's)
    redelivered = [
        r for r in after if r.key != TICK_KEY and r.offset >= committed.get(r.partition, 0)
    ]
    old_ids = {c["claim_id"] for c in batch1}
    redelivered_old = [r for r in redelivered if r.json()["claim_id"] in old_ids]
    assert len(redelivered_old) < len(batch1)
    assert len(batch2) == events.get("accepted", 0.0)
    assert events.get("duplicate", 0.0) <= len(redelivered) - len(batch2)
    # a phase-1 decision sent again is only the fact's last one, re-sent for a record past the
    # committed offset (at-least-once): only on partitions the old worker left uncommitted
    last1 = {fact_key(d): d["decision_id"] for d in phase1}
    repeated = [d for d in phase2 if d["decision_id"] in {x["decision_id"] for x in phase1}]
    assert [] == [d for d in repeated if last1[fact_key(d)] != d["decision_id"]]
    behind = {p for p, end in ends.items() if committed.get(p, 0) < end}
    assert [] == [d for d in repeated if partition_of[fact_key(d)] not in behind]
    print(
        f"layout resume: {len(phase1)} decisions before the switch, {len(phase2)} after "
        f"({len(repeated)} repeated); committed {sorted(committed.items())} of ends "
        f"{sorted(ends.items())}; {len(redelivered_old)} batch-1 records redelivered; "
        f"new worker's events {dict(sorted(events.items()))}"
    )

    # (d) both workers ran without a traceback
    assert "Traceback" not in old.log
    assert "Traceback" not in new.log
