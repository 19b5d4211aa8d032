"""A topic replay shared out among processes gives the one-process output, byte for byte."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from claimwatch.audit.replay_topic import fixed_range
from claimwatch.audit.replay_topic_parallel import PARALLEL_FROM_RECORDS, wants_parallel
from claimwatch.wire import kafka
from claimwatch.wire.topics import TopicNames, ensure_topics, partition_for

from tests.support.cli import run_cli
from tests.support.hostile import hostile_corpus, hostile_policy_yaml, valid_claims
from tests.support.kafka import unique

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 4


async def _publish(bootstrap: str, names: TopicNames) -> None:
    """More claims than the parallel threshold, hostile records among them, on 4 partitions."""
    await ensure_topics(bootstrap, names, PARTITIONS)
    now_us = time.time_ns() // 1000
    records = [
        (f"{c['subject']}|{c['field']}".encode(), orjson.dumps(c))
        for c in valid_claims(5, PARALLEL_FROM_RECORDS + 2_000, now_us - 30_000_000)
    ]
    hostile = [(m.key, m.value) for m in hostile_corpus(5, 60, now_us - 20_000_000)]
    records[1000:1000] = hostile
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        for key, value in records:
            part = partition_for(key, PARTITIONS) if key else 0
            await producer.send(names.claims, value, key=key, partition=part)
        await producer.flush()
    finally:
        await producer.stop()


async def _is_shared_out(bootstrap: str, topic: str) -> bool:
    consumer = kafka.consumer(bootstrap)
    await consumer.start()
    try:
        return wants_parallel(await fixed_range(consumer, bootstrap, topic, None, None), 2)
    finally:
        await consumer.stop()


def test_a_shared_out_topic_replay_is_the_one_process_replay(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """`--jobs 2` over a large claims topic writes what `--jobs 1` writes, and reports alike."""
    names = TopicNames(unique("replay-jobs") + ".")
    asyncio.run(_publish(kafka_bootstrap, names))
    policy = tmp_path / "policy.yaml"
    policy.write_text(hostile_policy_yaml())
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs-{jobs}.jsonl"
        proc = run_cli(
            "replay", "--policy", str(policy), "--bootstrap", kafka_bootstrap,
            "--topic-prefix", names.prefix, "--from-beginning", "--out", str(out),
            "--jobs", jobs,
        )  # fmt: skip
        outputs[jobs] = (proc.returncode, proc.stderr, out.read_bytes())
    assert asyncio.run(_is_shared_out(kafka_bootstrap, names.claims))
    assert outputs["1"] == outputs["2"]
    assert (0, b"") == outputs["1"][:2]
    assert 2_000 < outputs["1"][2].count(b"\n")
