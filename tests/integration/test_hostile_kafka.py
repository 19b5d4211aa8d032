"""A hostile corpus mixed with valid claims through one live worker: every record accounted for."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.wire.topics import TopicNames

from tests.support.hostile import HostileMessage, hostile_corpus, hostile_policy_yaml, valid_claims
from tests.support.kafka import Record, TopicReader, Workers, rfc3339, write_policy

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]

HOSTILE = 2_100
VALID = 600
#: kinds whose times are absolute, written around the corpus's own T0 (September 2026):
#: live, where the clock is today, they are decided stale or dead-lettered as ahead
ABSOLUTE_TIME_KINDS = frozenset({"time_an_hour_ahead", "time_leap_second"})
#: kinds whose every record is a claim of one fact with a 20 KB subject: the fact's byte
#: budget (256 KiB of live claims) holds about a dozen of them, and refuses the rest to the
#: DLQ with the budget as reason
FACT_BUDGET_KINDS = frozenset({"subject_very_long"})


def valid_message(claim: dict[str, Any]) -> HostileMessage:
    """A valid claim as a record keyed by its fact."""
    key = f"{claim['subject']}|{claim['field']}".encode()
    return HostileMessage("valid", key, orjson.dumps(claim), [], "decided", claim["claim_id"])


def mixed_corpus(seed: int) -> list[HostileMessage]:
    """Hostile records and valid claims interleaved (each list keeps its own order)."""
    start = parse_rfc3339(rfc3339(datetime.now(UTC)))
    hostile = hostile_corpus(seed, HOSTILE, start_us=start)
    valid = [valid_message(c) for c in valid_claims(seed, VALID, start_us=start)]
    total = len(hostile) + len(valid)
    slots = set(random.Random(seed).sample(range(total), len(valid)))
    h, v = iter(hostile), iter(valid)
    return [next(v) if index in slots else next(h) for index in range(total)]


async def publish(
    bootstrap: str, topic: str, messages: list[HostileMessage]
) -> list[tuple[int, int]]:
    """Send every record in order with its headers; returns each one's (partition, offset)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", max_request_size=2 << 20, linger_ms=5
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, m.value, key=m.key, headers=m.headers or None)
            for m in messages
        ]
        metas = await asyncio.gather(*futures)
        return [(meta.partition, meta.offset) for meta in metas]
    finally:
        await producer.stop()


def decided_ids(records: list[Record]) -> set[str]:
    """Every claim id listed by a decision."""
    return {c["claim_id"] for r in records for c in r.json()["claims"]}


def dead_letters(records: list[Record]) -> tuple[set[tuple[int, int]], set[str]]:
    """The (partition, offset) origins of DLQ records, and the claim ids of DLQ claims."""
    origins, ids = set(), set()
    for record in records:
        headers = record.headers
        assert "claimwatch.reason" in headers, record
        origins.add((int(headers["claimwatch.partition"]), int(headers["claimwatch.offset"])))
        try:
            value = orjson.loads(record.value)
        except orjson.JSONDecodeError:  # not JSON, or nested beyond orjson's 1024 levels
            continue
        if isinstance(value, dict) and isinstance(value.get("claim_id"), str):
            ids.add(value["claim_id"])
    return origins, ids


def unaccounted(
    messages: list[HostileMessage],
    placed: list[tuple[int, int]],
    decided: set[str],
    dlq_origins: set[tuple[int, int]],
    dlq_ids: set[str],
) -> list[str]:
    """Each record that is neither decided, dead-lettered nor an ignored redelivery or tick."""
    missing = []
    for message, origin in zip(messages, placed, strict=True):
        in_dlq = origin in dlq_origins or (message.claim_id in dlq_ids)
        is_decided = message.claim_id is not None and message.claim_id in decided
        expect = message.expect
        if message.kind in ABSOLUTE_TIME_KINDS | FACT_BUDGET_KINDS:
            ok = is_decided or in_dlq
        elif expect == "decided":
            ok = is_decided
        elif expect == "dead_letter":
            ok = in_dlq
        elif expect == "redelivery":
            ok = origin not in dlq_origins and (message.claim_id in decided)
        else:  # ignored_tick
            ok = origin not in dlq_origins
        if not ok:
            missing.append(f"{message.kind}@{origin}: expected {expect}")
    return missing


async def test_hostile_corpus_through_a_live_worker_is_accounted_for_exactly(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """2,100 hostile records of 112 kinds and 600 valid claims: none lost, none fatal."""
    policy = write_policy(tmp_path, hostile_policy_yaml())
    worker = await workers.launch(policy)
    names = TopicNames(worker.prefix)
    messages = mixed_corpus(seed=13)
    kinds = Counter(m.kind for m in messages if m.kind != "valid")
    assert 40 <= len(kinds)
    placed = await publish(kafka_bootstrap, names.claims, messages)
    wanted = {m.claim_id for m in messages if m.expect == "decided" and m.claim_id}
    wanted -= {m.claim_id for m in messages if m.kind in ABSOLUTE_TIME_KINDS | FACT_BUDGET_KINDS}
    async with (
        TopicReader(kafka_bootstrap, names.decisions) as decisions,
        TopicReader(kafka_bootstrap, names.dlq) as dlq,
    ):
        deadline = time.monotonic() + 180
        while not wanted <= decided_ids(decisions.records) and time.monotonic() < deadline:
            await decisions.poll(0.5)
        await decisions.drain(idle=3.0, timeout=120)
        await dlq.drain(idle=3.0, timeout=120)
    decided = decided_ids(decisions.records)
    origins, ids = dead_letters(dlq.records)
    missing = unaccounted(messages, placed, decided, origins, ids)
    assert [] == missing[:20], f"{len(missing)} records unaccounted for"
    valid_ids = {m.claim_id for m in messages if m.kind == "valid"}
    assert set() == valid_ids - decided
    status, body = await worker.get("/health")
    assert 200 == status, body
    _, metrics = await worker.get("/metrics")
    text = metrics.decode()
    assert "claimwatch_internal_errors_total{" not in text, "no record should need the guard"
    bad_ticks = sum(1 for m in messages if m.expect == "ignored_tick")
    counted = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('claimwatch_stream_events_total{event="bad_tick"}')
    )
    assert bad_ticks == counted  # the worker's own ticks are never counted (ticks.tick_at)
    assert "Crashed" not in worker.log
    assert "Traceback" not in worker.log
