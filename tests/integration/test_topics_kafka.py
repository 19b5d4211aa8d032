"""The worker's topic checks at start, on the real broker: fixed in place, or refused."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from claimwatch.wire.topics import TopicNames, TopicsRefused, ensure_topics, partition_for

from tests.support.claims import envelope
from tests.support.kafka import TopicReader, Workers, publish_claims, rfc3339, unique
from tests.support.paths import EXAMPLE_POLICY

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

PARTITIONS = 4
TEN_DAYS_MS = 10 * 86_400_000
#: A topic setting that lets a CreateTime topic take records stamped any time ahead: the
#: default of Kafka 3.9 (Long.MAX_VALUE); Kafka 4.0 lowered it to one hour (KIP-1079), so
#: a 4.x broker rejects the forged records below (InvalidTimestamp) unless a topic raised it.
ANY_TIME_AHEAD = {"message.timestamp.after.max.ms": str(2**63 - 1)}


async def _create(bootstrap: str, *topics: NewTopic) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(list(topics))
    finally:
        await admin.close()


async def _settings(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (response,) = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)]
        )
    finally:
        await admin.close()
    entries = response.to_object()["resources"][0]["config_entries"]
    return {e["config_names"]: e["config_value"] for e in entries}


async def test_topics_made_by_hand_with_create_time_are_fixed_and_keep_their_own_settings(
    kafka_bootstrap: str,
) -> None:
    """Settings the worker needs are changed in place, one line each; other overrides stay.

    CreateTime claims and verdicts, a finite claims retention, a deleting resolutions topic.
    """
    names = TopicNames(unique("cwtopics") + ".")
    await _create(
        kafka_bootstrap,
        NewTopic(
            names.claims,
            PARTITIONS,
            1,
            topic_configs={"max.message.bytes": "2000000", "retention.ms": "86400000"},
        ),
        NewTopic(names.verdicts, PARTITIONS, 1),
        NewTopic(names.resolutions, PARTITIONS, 1),
    )
    try:
        lines = await ensure_topics(kafka_bootstrap, names, PARTITIONS)
        again = await ensure_topics(kafka_bootstrap, names, PARTITIONS)
        claims = await _settings(kafka_bootstrap, names.claims)
        verdicts = await _settings(kafka_bootstrap, names.verdicts)
        resolutions = await _settings(kafka_bootstrap, names.resolutions)
    finally:
        await _delete(kafka_bootstrap, names)

    expected = {
        f"topic {names.claims}: message.timestamp.type was CreateTime, set to LogAppendTime",
        f"topic {names.claims}: retention.ms was 86400000, set to -1",
        f"topic {names.verdicts}: message.timestamp.type was CreateTime, set to LogAppendTime",
        f"topic {names.resolutions}: cleanup.policy was delete, set to compact",
    }
    assert expected == {line.split(" (")[0] for line in lines}
    assert [] == again
    assert ("LogAppendTime", "-1", "2000000") == (
        claims["message.timestamp.type"],
        claims["retention.ms"],
        claims["max.message.bytes"],
    )
    assert "LogAppendTime" == verdicts["message.timestamp.type"]
    assert "compact" == resolutions["cleanup.policy"]


@pytest.mark.parametrize("topic", ["claims", "decisions", "verdicts"])
async def test_a_topic_of_another_size_is_refused_with_the_command_to_run(
    kafka_bootstrap: str, topic: str
) -> None:
    """A one-partition topic (what auto-creation makes) is named with the commands to run."""
    names = TopicNames(unique("cwtopics") + ".")
    name = getattr(names, topic)
    await _create(kafka_bootstrap, NewTopic(name, 1, 1))
    try:
        with pytest.raises(TopicsRefused) as refused:
            await ensure_topics(kafka_bootstrap, names, PARTITIONS)
    finally:
        await _delete(kafka_bootstrap, names)
    text = str(refused.value)
    assert f"topic {name}: has 1 partition(s)" in text
    assert f"kafka-topics.sh --bootstrap-server {kafka_bootstrap} --delete --topic {name}" in text
    if topic == "claims":
        assert "claimwatch worker --partitions 1" in text
    else:
        assert f"--alter --topic {name} --partitions {PARTITIONS}" in text


async def test_the_worker_refuses_a_claims_topic_of_another_size_with_exit_2(
    workers: Workers,
) -> None:
    """The worker as shipped: exit 2, the message names the topic and the command."""
    worker = workers.new(EXAMPLE_POLICY)
    await _create(worker.bootstrap, NewTopic(worker.names.claims, 1, 1))
    worker.start()
    assert worker.proc is not None
    assert 2 == worker.proc.wait(90)
    assert f"topic {worker.names.claims}: has 1 partition(s)" in worker.log
    assert "claimwatch worker --partitions 1" in worker.log
    assert "Traceback" not in worker.log


def _claim(cid: str, subject: str, observed: datetime) -> dict[str, Any]:
    return envelope(cid, "billing-api", "paid", subject=subject, observed_at=rfc3339(observed))


async def test_claims_stamped_ten_days_ahead_before_the_worker_started_stop_no_partition(
    workers: Workers,
) -> None:
    """Issue 40 item 4(a): forged record times never stop the claims published after them.

    A pre-made CreateTime claims topic holds one record per partition stamped 10 days
    ahead (its topic accepts any time ahead, as 3.9's default does). The worker sets the
    topic to LogAppendTime (a line in its log), caps the forged times at its wall clock, and
    decides the 20 valid claims published next; a record forged after the fix is stamped by
    the broker.
    """
    worker = workers.new(EXAMPLE_POLICY)
    names = worker.names
    bootstrap = worker.bootstrap
    await _create(bootstrap, NewTopic(names.claims, PARTITIONS, 1, topic_configs=ANY_TIME_AHEAD))
    now = datetime.now(UTC)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        future_ms = int(time.time() * 1000) + TEN_DAYS_MS
        forged: dict[int, dict[str, Any]] = {}
        for n in range(200):
            claim = _claim(f"forged-{n}", f"invoice:F{n}", now)
            key = f"{claim['subject']}|{claim['field']}".encode()
            forged.setdefault(partition_for(key, PARTITIONS), claim)
        assert PARTITIONS == len(forged)
        for claim in forged.values():
            key = f"{claim['subject']}|{claim['field']}".encode()
            await producer.send_and_wait(
                names.claims, orjson.dumps(claim), key=key, timestamp_ms=future_ms
            )
        await worker.launch()
        after = _claim("forged-after", "invoice:F-after", datetime.now(UTC))
        meta = await producer.send_and_wait(
            names.claims,
            orjson.dumps(after),
            key=f"{after['subject']}|{after['field']}".encode(),
            timestamp_ms=future_ms,
        )
    finally:
        await producer.stop()
    assert abs(meta.timestamp - time.time() * 1000) < 60_000  # the broker's clock, not ours

    fresh = datetime.now(UTC)
    valid = [
        _claim(f"valid-{n}", f"invoice:V{n}", fresh - timedelta(milliseconds=n)) for n in range(20)
    ]
    await publish_claims(bootstrap, names.prefix, valid)
    wanted = {c["claim_id"] for c in valid}
    async with TopicReader(bootstrap, names.decisions) as reader:

        def decided(records: list[Any]) -> set[str]:
            return {c["claim_id"] for r in records for c in r.json()["claims"]} & wanted

        await reader.wait_for(lambda read: wanted == decided(read), 60, "20 decided claims")

    assert f"topic {names.claims}: message.timestamp.type was CreateTime" in worker.log
    _, metrics = await worker.get("/metrics")
    capped = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.decode().splitlines()
        if line.startswith('claimwatch_stream_events_total{event="clock_capped"}')
    )
    assert PARTITIONS <= capped


async def _delete(bootstrap: str, names: TopicNames) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(names.prefix)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()
