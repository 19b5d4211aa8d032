"""The streaming baseline: the plain resolver of `bench.plain_resolve`, deciding per claim.

What an engineer writes for a stream from docs/concepts.md (#decide, #time) at settle 0: one
dict of checked claims per fact, a clock per partition (the largest `observed_at` seen),
each claim checked once on arrival, claims past their field's freshness dropped from the
fact (for `until_edited`, a source's older claims), the fact decided again after every
claim, the decision kept when its id changed, and the fact's claims serialized as its
changelog value. Stdlib `json`, no lineage cap,
signing, contract versions, windows, ticks or alerts: it does less than claimwatch does,
so what it costs per claim is a floor for any pure-Python decider of the same records.

It answers two questions of issue 15 with figures instead of guesses, in the same process
and on the same records as claimwatch's own step:

- `step`: microseconds per claim of this baseline vs the worker's claims runtime
  (`Runtime.handle`, no Kafka) over the pipeline workload;
- `replay`: this baseline over a claims file vs `bench.plain_resolve` over the same file,
  both whole passes in this process: how much slower a replay is than a resolve when both
  are written plainly (a replay decides every claim, a resolve every fact once).
"""

from __future__ import annotations

import json
import sys
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from claimwatch.policy.loading import load_policy
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.claims.edge import Runtime

from bench import plain_resolve
from bench.pipeline_bench import fresh_claims, settle_zero_policy
from bench.workload import NOW, POLICY

#: Runs of each side, taken in turns; the median is reported.
RUNS: Final = 3


class PlainStream:
    """The streaming baseline's state: checked claims per fact, clocks, last decision ids."""

    def __init__(self, policy: dict[str, Any], partitions: int) -> None:
        self.policy = policy
        self.partitions = partitions
        self.clocks = [float("-inf")] * partitions
        self.facts: dict[str, dict[str, dict[str, Any]]] = {}
        self.last: dict[str, str] = {}
        self.decisions = 0

    def handle(self, value: bytes, partition: int | None = None) -> list[bytes]:
        """One claim: the records it makes (decision, resolution and changelog, or none)."""
        claim = json.loads(value)
        key = f"{claim['subject']}|{claim['field']}"
        if partition is None:
            partition = zlib.crc32(key.encode()) % self.partitions
        checked = plain_resolve.check(self.policy, claim, float("inf"))
        at = checked.get("_at")
        if at is not None and at > self.clocks[partition]:
            self.clocks[partition] = at
        now = self.clocks[partition]
        fact = self.facts.setdefault(key, {})
        if claim["claim_id"] in fact:
            return []  # a redelivery
        fact[claim["claim_id"]] = checked
        spec = self.policy["fields"].get(claim["field"])
        if spec is not None and spec["freshness_s"] == float("inf"):  # until_edited
            newest: dict[str, dict[str, Any]] = {}  # a source's newer claim replaces its older
            for c in fact.values():
                kept = newest.get(c["source"])
                if kept is None or c.get("_at", 0) >= kept.get("_at", 0):
                    newest[c["source"]] = c
            for claim_id in [i for i, c in fact.items() if newest[c["source"]] is not c]:
                del fact[claim_id]
        elif spec is not None:
            horizon = now - spec["freshness_s"]
            for claim_id in [i for i, c in fact.items() if c.get("_at", now) < horizon]:
                del fact[claim_id]
        record = plain_resolve.decide(self.policy, key, [dict(c) for c in fact.values()], now)
        changelog = json.dumps(list(fact.values())).encode()
        if self.last.get(key) == record["decision_id"]:
            return [changelog]
        self.last[key] = record["decision_id"]
        self.decisions += 1
        line = json.dumps(record).encode()
        return [line, line, changelog]


def step_us(records: Iterable[tuple[bytes, bytes, int]], partitions: int) -> float:
    """Microseconds per claim of the streaming baseline over `records` (key, value, part)."""
    stream = PlainStream(plain_resolve.compile_policy(str(POLICY)), partitions)
    items = list(records)
    started = time.perf_counter()
    for _key, value, partition in items:
        stream.handle(value, partition)
    return (time.perf_counter() - started) * 1e6 / len(items)


def runtime_us(
    records: Iterable[tuple[bytes, bytes, int]], partitions: int, now_us: int | None = None
) -> float:
    """Microseconds per claim of the worker's claims runtime over the same records.

    `now_us` is every record's broker time (default: the wall clock when they are handed in).
    """
    policy = load_policy(settle_zero_policy(Path(".cache/bench/plain-stream-settle0.yaml")))
    runtime = Runtime(policy, TopicNames("bench."), partitions, {})
    items = list(records)
    now = now_us if now_us is not None else time.time_ns() // 1000
    started = time.perf_counter()
    for offset, (key, value, partition) in enumerate(items):
        runtime.handle(partition, offset, key, value, now)
    return (time.perf_counter() - started) * 1e6 / len(items)


def replay_s(path: Path) -> float:
    """Seconds for the streaming baseline to decide every claim of a file, in file order."""
    stream = PlainStream(plain_resolve.compile_policy(str(POLICY)), 4)
    started = time.perf_counter()
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                stream.handle(line)
    return time.perf_counter() - started


def resolve_s(path: Path) -> float:
    """Seconds for the plain resolver over the same file (its output discarded)."""
    saved = sys.stdout
    started = time.perf_counter()
    try:
        with open("/dev/null", "w", encoding="utf-8") as sys.stdout:
            plain_resolve.main(str(POLICY), str(path), NOW)
    finally:
        sys.stdout = saved
    return time.perf_counter() - started


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def step(claims: int, facts: int, partitions: int = 4) -> dict[str, Any]:
    """Our runtime's µs per claim vs the baseline's, `RUNS` times in turns, and the ratio."""
    source = fresh_claims(facts, "p")
    records = [next(source) for _ in range(claims)]
    plain: list[float] = []
    ours: list[float] = []
    for _ in range(RUNS):
        plain.append(round(step_us(records, partitions), 1))
        ours.append(round(runtime_us(records, partitions), 1))
    return {
        "claims": claims,
        "facts": facts,
        "plain_us_per_claim": plain,
        "runtime_us_per_claim": ours,
        "runtime_over_plain": round(_median(ours) / _median(plain), 2),
    }


def replay(path: Path) -> dict[str, Any]:
    """The baseline's replay of a file vs the plain resolve of it: the speed ratio."""
    streamed = replay_s(path)
    resolved = resolve_s(path)
    return {
        "plain_replay_s": round(streamed, 2),
        "plain_resolve_s": round(resolved, 2),
        "ratio": round(resolved / streamed, 2),
    }


if __name__ == "__main__":
    if sys.argv[1] == "step":
        print(json.dumps(step(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        print(json.dumps(replay(Path(sys.argv[2]))))
