"""The streaming baseline decides the pipeline workload claim by claim as the runtime does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
from claimwatch.policy.loading import load_policy
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.claims.edge import Runtime

from bench import plain_resolve
from bench.pipeline_bench import fresh_claims, settle_zero_policy
from bench.plain_stream import PlainStream
from bench.workload import POLICY


def summary(record: dict[str, Any]) -> tuple[Any, ...]:
    """What both must agree on: the fact, outcome, value, canonical, every claim's fate."""
    fates = sorted((c["claim_id"], c["disposition"]) for c in record["claims"])
    key = (record["subject"], record["field"])
    return (key, record["outcome"], record["value"], record["canonical"], fates)


def test_the_streaming_baseline_makes_the_runtimes_decisions(tmp_path: Path) -> None:
    """Same records at settle 0: the same decisions, in the same order, claim by claim."""
    source = fresh_claims(300, "s")
    records = [next(source) for _ in range(1_500)]
    plain = PlainStream(plain_resolve.compile_policy(str(POLICY)), 4)
    expected: list[tuple[Any, ...]] = []
    for _key, value, partition in records:
        made = plain.handle(value, partition)
        if len(made) == 3:  # decision, resolution, changelog
            expected.append(summary(orjson.loads(made[0])))
    policy = load_policy(settle_zero_policy(tmp_path / "settle0.yaml"))
    runtime = Runtime(policy, TopicNames("t."), 4, {})
    now = time.time_ns() // 1000
    actual = [
        summary(decided.record)
        for offset, (key, value, partition) in enumerate(records)
        for decided in runtime.handle(partition, offset, key, value, now).decided
    ]
    assert 1_500 == len(expected)
    assert {"resolved", "conflict"} <= {e[1] for e in expected}
    assert expected == actual


def test_a_redelivered_claim_makes_no_decision() -> None:
    """The same claim read twice is decided once."""
    _key, value, partition = next(fresh_claims(10, "r"))
    plain = PlainStream(plain_resolve.compile_policy(str(POLICY)), 4)
    assert 3 == len(plain.handle(value, partition))
    assert [] == plain.handle(value, partition)
