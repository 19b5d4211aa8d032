"""Replay speed: a claims file vs `claimwatch resolve`, a claims topic vs a plain aiokafka read."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from claimwatch.wire.kafka import env_bootstrap, topic_partitions
from claimwatch.wire.topics import TopicNames

from bench.tree_memory import TreePeak
from bench.workload import NOW, POLICY

#: Claims published to the topic that both topic sides read.
TOPIC_CLAIMS = int(os.environ.get("CLAIMWATCH_BENCH_REPLAY_TOPIC_CLAIMS", "200000"))
PARTITIONS = 4


@contextlib.contextmanager
def _stdout_to_devnull() -> Iterator[None]:
    """Send fd 1 to /dev/null (the CLI writes its records there), then restore it."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


def _cli(*args: str) -> float:
    """Run one claimwatch command in this process (its output discarded); its seconds."""
    from claimwatch.cli.main import build

    app = build()
    started = time.perf_counter()
    with _stdout_to_devnull():
        try:
            app(list(args), standalone_mode=False)
        except SystemExit as exc:  # typer.Exit(1) on malformed lines; the workload has none
            if exc.code not in (0, None):
                raise
    return time.perf_counter() - started


async def _plain_read(topic: str) -> tuple[int, int]:
    """Read every record of `topic` (assign + seek, no group): (records, value bytes)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=env_bootstrap(),
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        partitions = await topic_partitions(env_bootstrap(), topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        end = await consumer.end_offsets(tps)
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        records = size = 0
        left = {tp for tp in tps if end[tp] > 0}
        while left:
            batches = await consumer.getmany(timeout_ms=1000, max_records=10_000)
            for tp, messages in batches.items():
                for message in messages:
                    records += 1
                    size += len(message.value or b"")
                if messages and messages[-1].offset + 1 >= end[tp]:
                    left.discard(tp)
        return records, size
    finally:
        await consumer.stop()


def side(mode: str, target: str, claims: int) -> dict[str, Any]:
    """One side, timed in this process (imports excluded): figures of `claims` claims."""
    import claimwatch.cli.main  # noqa: F401  (imported before the clock starts, as for every side)

    policy = str(POLICY)
    with TreePeak(every=0.25) as tree:  # the same light sampling on every side
        seconds = _timed(mode, target, claims, policy)
    return {
        "mode": mode,
        "claims": claims,
        "seconds": round(seconds, 3),
        "claims_per_s": round(claims / seconds),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        # the largest process it forked (resolve and replay share a big file out: each of
        # their processes holds its own share of the facts)
        "children_peak_rss_mib": round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        ),
        # what the whole process tree held at once (sampled every 0.25 s): RSS counts a
        # page shared after fork in every process (an upper bound), PSS splits it
        "tree_peak_rss_mib": tree.rss_mib,
        "tree_peak_pss_mib": tree.pss_mib,
        "processes": tree.processes,
    }


def _timed(mode: str, target: str, claims: int, policy: str) -> float:
    """Seconds of one side's work."""
    if mode == "file-replay":
        seconds = _cli("replay", "--policy", policy, "--input", target, "--out", os.devnull)
    elif mode == "file-resolve":
        seconds = _cli("resolve", "--policy", policy, "--now", NOW, target)
    elif mode == "topic-replay":
        seconds = _cli(
            "replay", "--policy", policy, "--from-beginning", "--topic-prefix", target,
            "--bootstrap", env_bootstrap(), "--out", os.devnull,
        )  # fmt: skip
    elif mode == "topic-read":
        started = time.perf_counter()
        read, _ = asyncio.run(_plain_read(TopicNames(target).claims))
        seconds = time.perf_counter() - started
        if read != claims:
            raise RuntimeError(f"read {read} records, expected {claims}")
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    return seconds


def _side(mode: str, target: str, claims: int) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.replay_bench", mode, target, str(claims)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def _ratio(side: dict[str, Any], base: dict[str, Any]) -> float:
    return round(float(side["claims_per_s"]) / float(base["claims_per_s"]), 2)


async def _publish(prefix: str, count: int) -> int:
    """`count` workload claims observed now (10 per fact) to the claims topic of `prefix`.

    Observed now, not at the workload's fixed base: a topic replay moves the partition clock
    to each record's arrival (its broker timestamp), so older claims would only expire.
    """
    from claimwatch.wire.topics import ensure_topics

    from bench.kafka_io import produce
    from bench.pipeline_bench import fresh_claims

    names = TopicNames(prefix)
    await ensure_topics(env_bootstrap(), names, PARTITIONS)
    source = fresh_claims(max(1, count // 10), "r")
    return await produce(names.claims, (next(source) for _ in range(count)))


def run(path: Path) -> dict[str, Any]:
    """File replay vs resolve on `path`; topic replay vs a plain read of the same topic."""
    from bench.kafka_io import delete_topics

    with path.open("rb") as handle:
        claims = sum(1 for _ in handle)
    replay = _side("file-replay", str(path), claims)
    resolve = _side("file-resolve", str(path), claims)
    prefix = f"cwbench-replay-{uuid.uuid4().hex[:8]}."
    try:
        published = asyncio.run(_publish(prefix, TOPIC_CLAIMS))
        topic_replay = _side("topic-replay", prefix, published)
        plain = _side("topic-read", prefix, published)
    finally:
        asyncio.run(delete_topics(prefix))
    return {
        "file": {
            "replay": replay,
            "resolve": resolve,
            "ratio": _ratio(replay, resolve),
        },
        "topic": {
            "replay": topic_replay,
            "plain_read": plain,
            "ratio": _ratio(topic_replay, plain),
        },
    }


if __name__ == "__main__":
    if len(sys.argv) == 4:
        print(json.dumps(side(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
    else:
        print(json.dumps(run(Path(sys.argv[1]))))
