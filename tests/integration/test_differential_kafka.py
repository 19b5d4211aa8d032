"""A differential property on the real broker: the live worker and `claimwatch replay` agree.

A seeded random stream (tests/support/generators.py `random_stream`: out of order, late,
stale, duplicated with the same and other content, missing times, broken values, six
field types, a few claims per fact, spread over enough time that windows close and facts
expire) goes through a worker started as the README starts it (default store, default
settings). Once every deadline has passed the worker is stopped, and `claimwatch replay`
of the same claims topic (its ticks included) under the same policy must make the same
decisions, fact by fact, in the same order; every claim sent must be listed in a decision
of its fact (a conflicting duplicate's id is, by its original's).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from claimwatch.worker.ticks import TICK_KEY, tick_value

from tests.support.generators import Planned, random_stream, stamp
from tests.support.kafka import (
    CLAIMWATCH,
    Record,
    Workers,
    fact_key,
    read_topic,
    wait_for_ticks,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

SEED: Final = int(os.environ.get("CLAIMWATCH_DIFF_SEED", "40"))
CLAIMS: Final = 2_000
SPAN_S: Final = 24.0
PARTITIONS: Final = 4
#: A tick written by the test every this many claims, shifted by one of these from now.
TICK_EVERY: Final = 50
TICK_SHIFTS_US: Final = (-2_000_000, -30_000_000, 0, 10_000_000, 3_600_000_000)
#: Longest freshness budget plus max_delay of the policy below, and a margin for the ticks.
QUIET_S: Final = 20 + 3 + 4
POLICY_TEXT: Final = """\
policy_version: differential-1
defaults: {freshness: 30s, settle: 1s, max_delay: 3s, clock_skew: 5s, grace: 5s}
sources:
  ledger: {authority: system_of_record, lineage: ledger}
  replica: {authority: cached, lineage: ledger}
  index: {authority: derived, lineage: index}
  user: {authority: asserted}
fields:
  status: {type: enum, values: [paid, unpaid, overdue], freshness: 10s, owner: ledger}
  flag:   {type: bool, freshness: 6s, settle: 0s}
  count:  {type: integer, freshness: 15s, on_conflict: prefer_primary, owner: ledger}
  score:  {type: number, tolerance: {abs: 0.01}, freshness: 20s,
           on_conflict: present_with_timestamp}
  price:  {type: money, currency: USD, freshness: 8s, settle: 500ms}
  note:   {type: text, freshness: 12s}
"""


async def publish_in_real_time(bootstrap: str, topic: str, plan: list[Planned]) -> list[dict]:
    """Send each planned claim at its delay (a plain producer, keyed by fact); returns them."""
    sent: list[dict[str, Any]] = []
    forged = random.Random(SEED)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        start = time.monotonic()
        pending = []
        for index, planned in enumerate(plan):
            await asyncio.sleep(max(0.0, start + planned.delay_s - time.monotonic()))
            now = datetime.now(UTC)
            if index % TICK_EVERY == 0:  # a tick from outside: on time, late, or forged ahead
                at_us = int(now.timestamp() * 1e6) + forged.choice(TICK_SHIFTS_US)
                tick = tick_value(at_us)
                where = forged.randrange(PARTITIONS)
                pending.append(await producer.send(topic, tick, key=TICK_KEY, partition=where))
            claim = stamp(planned, now)
            key = fact_key(claim).encode()
            body = json.dumps(claim, separators=(",", ":")).encode()  # 2**70 too
            pending.append(await producer.send(topic, body, key=key))
            sent.append(claim)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return sent


def per_fact(decisions: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Decision ids per fact in order, a repeated id (at-least-once) dropped."""
    grouped: dict[str, list[str]] = {}
    for record in decisions:
        ids = grouped.setdefault(fact_key(record), [])
        if record["decision_id"] not in ids:
            ids.append(record["decision_id"])
    return grouped


def dead_letter_reasons(records: list[Record]) -> dict[str, str]:
    """The DLQ reason of each dead-lettered claim, by claim id."""
    reasons: dict[str, str] = {}
    for record in records:
        claim = orjson.loads(record.value)
        reason = record.headers.get("claimwatch.reason", b"").decode()
        reasons.setdefault(str(claim.get("claim_id")), reason)
    return reasons


def replay(policy: Path, bootstrap: str, prefix: str, out: Path) -> None:
    """`claimwatch replay --from-beginning` of the deployment's claims topic into `out`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIMWATCH_")}
    proc = subprocess.run(
        [
            str(CLAIMWATCH),
            "replay",
            "--policy",
            str(policy),
            "--bootstrap",
            bootstrap,
            "--topic-prefix",
            prefix,
            "--from-beginning",
            "--out",
            str(out),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert (0, b"") == (proc.returncode, proc.stderr)


def first_differences(
    live: dict[str, list[str]], replayed: dict[str, list[str]], most: int = 5
) -> list[str]:
    """The first facts whose decision ids differ, for the failure message."""
    keys = sorted(set(live) | set(replayed))
    return [
        f"{k}: live {live.get(k)} replay {replayed.get(k)}"
        for k in keys
        if live.get(k) != replayed.get(k)
    ][:most]


@dataclass(frozen=True, slots=True)
class Differential:
    """One generated stream through a live worker, and the replay of its claims topic."""

    sent: list[dict[str, Any]]
    live: list[dict[str, Any]]
    replayed: list[dict[str, Any]]
    dlq: list[Record]


@pytest.fixture(scope="module")
async def differential(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Differential]:
    """The seeded stream sent through a worker as the README starts it, then replayed."""
    workdir = tmp_path_factory.mktemp("differential")
    factory = Workers(kafka_bootstrap, workdir, [])
    try:
        policy = write_policy(workdir, POLICY_TEXT)
        worker = await factory.launch(policy, partitions=PARTITIONS)
        await wait_for_ticks(kafka_bootstrap, worker.prefix)
        plan = random_stream(SEED, CLAIMS, SPAN_S)
        sent = await publish_in_real_time(kafka_bootstrap, worker.names.claims, plan)
        await asyncio.sleep(QUIET_S)  # every window closed, every budget run out, on the ticks
        assert 0 == worker.kill(signal.SIGTERM), worker.log

        live = [r.json() for r in await read_topic(kafka_bootstrap, worker.names.decisions)]
        dlq = await read_topic(kafka_bootstrap, worker.names.dlq)
        out = workdir / "replayed.jsonl"
        await asyncio.to_thread(replay, policy, kafka_bootstrap, worker.prefix, out)
        replayed = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
        yield Differential(sent, live, replayed, dlq)
    finally:
        factory.stop_all()


async def test_the_live_worker_and_a_replay_make_the_same_decisions(
    differential: Differential,
) -> None:
    """2,000+ generated claims: per fact the same decision ids, in order, live and replayed."""
    live_ids, replayed_ids = per_fact(differential.live), per_fact(differential.replayed)
    assert [] == first_differences(live_ids, replayed_ids)
    assert live_ids == replayed_ids

    # the stream reached what it is meant to: every outcome, expiry, dead letters
    outcomes = Counter(r["outcome"] for r in differential.live)
    assert {"resolved", "conflict", "insufficient", "rejected"} <= set(outcomes), outcomes
    assert all(r.headers.get("claimwatch.reason") for r in differential.dlq)
    assert len(differential.sent) >= CLAIMS and len(live_ids) >= 150 and differential.dlq


async def test_every_claim_sent_is_listed_in_a_decision(differential: Differential) -> None:
    """Each claim sent is listed in a live decision of its fact (a repeated id, by its first)."""
    sent, dlq = differential.sent, differential.dlq
    decided = {(fact_key(r), c["claim_id"]) for r in differential.live for c in r["claims"]}
    unanswered = sorted({(fact_key(c), c["claim_id"]) for c in sent} - decided)
    reasons = dead_letter_reasons(dlq)
    why = Counter(re.sub(r"\d+", "N", reasons.get(cid, "-")) for _, cid in unanswered)
    by_id = {c["claim_id"]: c for c in sent}
    shown = sorted(unanswered, key=lambda u: (u[1] in reasons, u))[:8]  # undead-lettered first
    assert [] == [(by_id[cid], reasons.get(cid, "-")) for _, cid in shown], (
        f"{len(unanswered)} of {len(sent)} claims unanswered (DLQ reason, '-' for none): "
        f"{dict(why)}\n" + "\n".join(f"{reasons.get(c, '-')}: {by_id[c]}" for _, c in shown)
    )
