"""The deployment's topics on a cluster: created and checked by the worker, required by clients.

Their names and settings are `topic_names`'s, the checks `topic_checks`'s, the partition of
a key `partitioning`'s; the names used everywhere are importable from here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Final

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaConnectionError, KafkaError, TopicAlreadyExistsError, for_code

from claimwatch.wire import kafka
from claimwatch.wire.partitioning import misplaced, partition_for
from claimwatch.wire.topic_checks import (
    Fix,
    Refusal,
    TopicsRefused,
    TopicState,
    check_topics,
    merged_overrides,
)
from claimwatch.wire.topic_names import TopicNames, wanted_configs

__all__ = [
    "BrokerUnavailable",
    "MissingTopic",
    "TopicNames",
    "TopicsRefused",
    "ensure_changelogs",
    "ensure_topics",
    "misplaced",
    "partition_for",
    "require_topics",
    "start_for",
]


class MissingTopic(RuntimeError):
    """A client's topic does not exist: no worker runs with its prefix on that broker."""


class BrokerUnavailable(ConnectionError):
    """No Kafka broker answered at the bootstrap address (nothing listening, unknown host)."""


def broker_unavailable(bootstrap: str | None) -> BrokerUnavailable:
    """The error of a broker that could not be reached, saying what to check.

    aiokafka's own message lists resolved addresses only; its log line has the cause.
    """
    where = bootstrap or kafka.env_bootstrap()
    return BrokerUnavailable(
        f"no Kafka broker answered at {where}. Start one (`make kafka-up` in a "
        "clone), or give the address of the running one (--bootstrap, CLAIMWATCH_BOOTSTRAP)"
    )


async def start_for(producer: Any, bootstrap: str | None, prefix: str, topics: list[str]) -> None:
    """Start `producer` once `require_topics` has found every one of `topics`.

    A producer made but not started is stopped all the same when they are missing (or the
    broker does not answer), so that a client refused at its start leaves nothing open.
    """
    try:
        await require_topics(bootstrap, prefix, topics)
    except BaseException:
        await producer.stop()
        raise
    await producer.start()


async def require_topics(bootstrap: str | None, prefix: str, topics: list[str]) -> None:
    """Raise `MissingTopic` unless every one of `topics` exists on the broker.

    `BrokerUnavailable` when no broker answers at `bootstrap`.

    Asked with the admin client's metadata request for every topic, which never creates
    one: a producer's metadata request for a missing topic makes the broker auto-create it
    (one partition, CreateTime) where auto-creation is on, and a worker would then adopt
    that topic. Clients ask this before they produce.
    """
    admin = kafka.admin(bootstrap)
    try:
        await admin.start()
        existing = set(await admin.list_topics())
    except KafkaConnectionError:
        raise broker_unavailable(bootstrap) from None
    finally:
        await admin.close()
    missing = [t for t in topics if t not in existing]
    if missing:
        raise MissingTopic(
            f"topic {missing[0]} does not exist on {bootstrap or kafka.env_bootstrap()}: no "
            f"worker has run with the topic prefix {prefix!r} there. Start one with that "
            f"prefix (claimwatch worker --topic-prefix {prefix!r} ...), or give the prefix "
            "of the running deployment (--topic-prefix, CLAIMWATCH_TOPIC_PREFIX)"
        )


async def ensure_topics(bootstrap: str, names: TopicNames, partitions: int) -> list[str]:
    """Create the deployment's missing topics, then check every one of them.

    A setting the worker may change (timestamp type, cleanup policy, retention: see
    `check_topics`) is changed, and the returned lines say so; a partition count that
    differs, or a change the broker refuses (no ALTER_CONFIGS permission), raises
    `TopicsRefused` naming the commands to run; `BrokerUnavailable` when no broker
    answers. The admin client has the CLAIMWATCH_* security settings, like every client
    of ours.
    """
    admin = kafka.admin(bootstrap)
    try:
        await admin.start()
    except KafkaConnectionError:
        await admin.close()
        raise broker_unavailable(bootstrap) from None
    try:
        existing = set(await admin.list_topics())
        configs = names.configs()
        new = [
            NewTopic(
                name,
                partitions if name != names.alerts else 1,
                1,
                topic_configs=configs.get(name, {}),
            )
            for name in names.every()
            if name not in existing
        ]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
        states = await _describe(admin, names)
        fixes, refusals = check_topics(names, partitions, states, bootstrap)
        if refusals:  # nothing is changed on a deployment that cannot start anyway
            raise TopicsRefused(refusals)
        done: list[str] = []
        for topic in sorted({f.topic for f in fixes}):
            mine = [f for f in fixes if f.topic == topic]
            problem = await _alter(admin, topic, mine)
            if problem is not None:
                refusals.append(
                    Refusal(
                        topic,
                        f"{', '.join(f'{f.key} is {f.was}' for f in mine)} and the worker "
                        f"could not change it ({problem})",
                        tuple(f.command(bootstrap) for f in mine),
                    )
                )
            else:
                done.extend(f.line() for f in mine)
        if refusals:
            raise TopicsRefused(refusals)
        return done
    finally:
        await admin.close()


async def ensure_changelogs(bootstrap: str, topics: list[str], partitions: int) -> None:
    """Create the tables' changelog topics that are missing (compacted, `partitions` each).

    Faust creates them itself once it runs, but a table written before its producer has
    the new topic's metadata raises PartitionsMismatch ("has 0 partitions"), failing a
    worker's first requests after a fresh start. Made here, before Faust starts, they are
    there from the first record on.
    """
    admin = kafka.admin(bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = [
            NewTopic(name, partitions, 1, topic_configs={"cleanup.policy": "compact"})
            for name in topics
            if name not in existing
        ]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
    finally:
        await admin.close()


async def _describe(admin: AIOKafkaAdminClient, names: TopicNames) -> dict[str, TopicState]:
    """The partition counts of the deployment's topics, and the settings the worker checks."""
    wanted = names.every()
    counts: dict[str, int] = {}
    for _ in range(50):  # a just-created topic may show no partitions for a moment
        described = await admin.describe_topics(wanted)
        counts = {t["topic"]: len(t["partitions"]) for t in described if not t["error_code"]}
        if all(counts.get(t) for t in wanted):
            break
        await asyncio.sleep(0.1)
    checked = [t for t in wanted_configs(names) if t in counts]
    settings = {t: await _configs(admin, t) for t in checked}
    return {
        t: TopicState(n, {k: v for k, (v, _) in settings.get(t, {}).items()})
        for t, n in counts.items()
    }


#: DescribeConfigs' source of a setting made on the topic itself (DYNAMIC_TOPIC_CONFIG).
_TOPIC_OVERRIDE: Final = 1


async def _configs(admin: AIOKafkaAdminClient, topic: str) -> dict[str, tuple[str, bool]]:
    """Every setting of a topic: its value, and whether the topic itself sets it."""
    responses = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    resource = responses[0].to_object()["resources"][0]
    if resource["error_code"]:
        raise TopicsRefused(
            [Refusal(topic, f"its settings cannot be read ({_error(resource)})", ())]
        )
    return {
        e["config_names"]: (
            e["config_value"],
            e.get("config_source", _TOPIC_OVERRIDE) == _TOPIC_OVERRIDE
            and not e.get("is_default", False),
        )
        for e in resource["config_entries"]
    }


async def _alter(admin: AIOKafkaAdminClient, topic: str, fixes: list[Fix]) -> str | None:
    """Apply `fixes` to a topic, keeping its other overrides; the broker's error, else None.

    aiokafka has only the whole-set AlterConfigs request: the overrides read just before
    are sent again with the fixes (an override another admin sets in between is lost).
    """
    current = await _configs(admin, topic)
    overrides = {k: v for k, (v, own) in current.items() if own}
    resource = ConfigResource(ConfigResourceType.TOPIC, topic, merged_overrides(overrides, fixes))
    try:
        responses = await admin.alter_configs([resource])
    except KafkaError as exc:
        return f"{type(exc).__name__}: {exc}"
    for response in responses:
        for answer in response.to_object()["resources"]:
            if answer["error_code"]:
                return _error(answer)
    return await _applied(admin, topic, fixes)


#: How long a changed setting may take to read back as changed (the broker applies an
#: AlterConfigs through its metadata log, a moment after it answers).
APPLY_WAIT_S: Final = 15.0


async def _applied(admin: AIOKafkaAdminClient, topic: str, fixes: list[Fix]) -> str | None:
    """None once every fix reads back from the broker; else what still reads otherwise.

    The worker starts consuming right after: a claims topic still on CreateTime for a
    moment would stamp its first records with their producers' times.
    """
    deadline = asyncio.get_running_loop().time() + APPLY_WAIT_S
    while True:
        current = await _configs(admin, topic)
        pending = [f for f in fixes if current.get(f.key, ("", False))[0] != f.value]
        if not pending:
            return None
        if asyncio.get_running_loop().time() >= deadline:
            return (
                "the broker accepted the change but still reads "
                + ", ".join(f"{f.key}={current.get(f.key, ('?', False))[0]}" for f in pending)
                + f" after {APPLY_WAIT_S:g} s"
            )
        await asyncio.sleep(0.1)


def _error(answer: Mapping[str, Any]) -> str:
    """A broker error of one resource, by name."""
    name = for_code(answer["error_code"]).__name__
    return f"{name}: {answer['error_message']}" if answer.get("error_message") else name
