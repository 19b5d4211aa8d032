"""Topic names (with the configurable prefix), their settings, and creating them on a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, overload

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code
from aiokafka.partitioner import murmur2

from streams.wire import kafka

#: Retention of the claims topic: unlimited, so every stream can be replayed.
UNLIMITED: Final = "-1"


class _Topic:
    """A topic's name, read from a `TopicNames`: the deployment's prefix, then `suffix`."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    @overload
    def __get__(self, names: None, owner: type[Any] | None = None) -> _Topic: ...
    @overload
    def __get__(self, names: TopicNames, owner: type[Any] | None = None) -> str: ...
    def __get__(self, names: TopicNames | None, owner: type[Any] | None = None) -> _Topic | str:
        return self if names is None else names.prefix + self.suffix


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Every topic of one deployment, by role."""

    prefix: str = "claimwatch."

    #: Claims as agents publish them, keyed by fact key; kept forever.
    claims = _Topic("claims")
    #: One decision record per decision, keyed by fact key.
    decisions = _Topic("decisions")
    #: The latest resolution of each fact (compacted), keyed by fact key.
    resolutions = _Topic("resolutions")
    #: Facts entering and leaving conflict, keyed by fact key.
    conflicts = _Topic("conflicts")
    #: Paging alerts (one partition), keyed by field.
    alerts = _Topic("alerts")
    #: Internal: decisions re-keyed by field, and partition clocks, for the detectors.
    alerts_input = _Topic("alerts.input")
    #: Records no agent could use, with their bytes and the reason in headers.
    dlq = _Topic("claims.dlq")
    #: Signals of policy checks, keyed by request id.
    verdicts = _Topic("verdicts")
    #: One decision per request, keyed by request id.
    verdicts_decisions = _Topic("verdicts.decisions")
    #: Document publish and append requests, keyed by path.
    publish = _Topic("publish")
    #: One result per document request, keyed by path.
    publish_results = _Topic("publish.results")
    #: Plans (steps and the facts they read), keyed by plan id.
    plans = _Topic("plans")
    #: The status of each plan step, keyed by plan id.
    plans_steps = _Topic("plans.steps")
    #: Internal: a plan starts or stops reading a fact; keyed by fact key.
    plans_interest = _Topic("plans.interest")
    #: Internal: a fact's current decision for one plan reading it; keyed by plan id.
    plans_updates = _Topic("plans.updates")

    def every(self) -> list[str]:
        """Every topic of the deployment, in declaration order."""
        return [getattr(self, n) for n, v in vars(TopicNames).items() if isinstance(v, _Topic)]

    def per_path(self) -> list[str]:
        """Topics keyed by document path, with the claims topic's partition count."""
        return [self.publish, self.publish_results]

    def per_plan(self) -> list[str]:
        """Topics of plan blocking, with the claims topic's partition count."""
        return [self.plans, self.plans_steps, self.plans_interest, self.plans_updates]

    def per_request(self) -> list[str]:
        """Topics keyed by request id, with the claims topic's partition count."""
        return [self.verdicts, self.verdicts_decisions]

    def per_fact(self) -> list[str]:
        """Topics keyed by fact key, with the claims topic's partition count."""
        return [
            self.claims,
            self.decisions,
            self.resolutions,
            self.conflicts,
            self.dlq,
            self.alerts_input,
        ]

    def configs(self) -> dict[str, dict[str, str]]:
        """The topic-level settings a new topic is created with (see `wanted_configs`)."""
        return {
            topic: {key: value for key, (value, _) in settings.items()}
            for topic, settings in wanted_configs(self).items()
        }


@functools.lru_cache(maxsize=131_072)
def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (murmur2, as the Java client)."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def misplaced(wanted: bytes, key: bytes | None, partition: int, partitions: int) -> int | None:
    """The home partition of a record that is not keyed `wanted` or not in its home, else None."""
    home = partition_for(wanted, partitions)
    return home if key != wanted or partition != home else None


#: The timestamp type of topics whose record times the worker trusts.
LOG_APPEND_TIME: Final = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class TopicState:
    """One existing topic as the broker describes it."""

    partitions: int
    #: the topic's effective settings (topic overrides and broker defaults alike)
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fix:
    """A topic setting the worker changes itself: safe, and the topic is the deployment's."""

    topic: str
    key: str
    value: str
    was: str
    why: str

    def line(self) -> str:
        """The one log line that says what was changed and why."""
        return f"topic {self.topic}: {self.key} was {self.was}, set to {self.value} ({self.why})"

    def command(self, bootstrap: str) -> str:
        """The command that makes the same change by hand."""
        return (
            f"kafka-configs.sh --bootstrap-server {bootstrap} --alter --entity-type topics "
            f"--entity-name {self.topic} --add-config {self.key}={self.value}"
        )


@dataclass(frozen=True, slots=True)
class Refusal:
    """Something the worker must not change itself: what is wrong and what to run."""

    topic: str
    problem: str
    commands: tuple[str, ...]

    def text(self) -> str:
        """What is wrong, and the commands that fix it (one line each)."""
        if not self.commands:
            return f"topic {self.topic}: {self.problem}"
        runs = "".join(f"\n    {c}" for c in self.commands)
        return f"topic {self.topic}: {self.problem}; to fix it, run one of:{runs}"


class TopicsRefused(RuntimeError):
    """The deployment's topics cannot be used as they are; the message says what to run."""

    def __init__(self, refusals: list[Refusal]) -> None:
        self.refusals = refusals
        super().__init__("\n".join(r.text() for r in refusals))


def wanted_configs(names: TopicNames) -> dict[str, dict[str, tuple[str, str]]]:
    """Per topic: each setting the worker needs, with the reason it needs it."""
    stamped = "the broker's clock stamps each record: a client cannot forge arrival times"
    return {
        names.claims: {
            "message.timestamp.type": (LOG_APPEND_TIME, stamped),
            "cleanup.policy": ("delete", "compaction would drop claims of the same fact"),
            "retention.ms": (UNLIMITED, "claims are kept so that every stream can be replayed"),
        },
        names.verdicts: {"message.timestamp.type": (LOG_APPEND_TIME, stamped)},
        names.resolutions: {
            "cleanup.policy": ("compact", "the latest resolution of every fact is kept")
        },
    }


def same_partitions(names: TopicNames) -> list[str]:
    """The topics that must have as many partitions as the claims topic."""
    return [*names.per_fact(), *names.per_request(), *names.per_path(), *names.per_plan()]


def check_topics(
    names: TopicNames, partitions: int, topics: Mapping[str, TopicState], bootstrap: str
) -> tuple[list[Fix], list[Refusal]]:
    """The fixes the worker makes and the refusals it stops at, for the topics that exist.

    `partitions` is the worker's configured count; a topic missing from `topics` is left
    alone (the worker creates it with the right settings).
    """
    fixes: list[Fix] = []
    refusals: list[Refusal] = []
    for topic in same_partitions(names):
        state = topics.get(topic)
        if state is not None and state.partitions != partitions:
            refusals.append(
                _partition_refusal(names, topic, state.partitions, partitions, bootstrap)
            )
    for topic, settings in wanted_configs(names).items():
        state = topics.get(topic)
        if state is None:
            continue
        for key, (value, why) in settings.items():
            was = state.configs.get(key)
            if was != value:
                fixes.append(Fix(topic, key, value, was if was is not None else "unset", why))
    return fixes, refusals


def _partition_refusal(
    names: TopicNames, topic: str, actual: int, partitions: int, bootstrap: str
) -> Refusal:
    """A topic of the wrong size: resizing moves keys to other partitions, so never automatic."""
    if topic == names.claims:
        return Refusal(
            topic,
            f"has {actual} partition(s), the worker is configured for {partitions} "
            "(every per-fact topic must match the claims topic)",
            (
                f"claimwatch worker --partitions {actual} ...   "
                "(keep the topic and its claims as they are)",
                f"kafka-topics.sh --bootstrap-server {bootstrap} --delete --topic {topic}   "
                "(only if its claims are not needed: the worker creates it again)",
            ),
        )
    grow = (
        (
            f"kafka-topics.sh --bootstrap-server {bootstrap} --alter --topic {topic} "
            f"--partitions {partitions}   (records already in it stay where they are)",
        )
        if actual < partitions
        else ()
    )
    return Refusal(
        topic,
        f"has {actual} partition(s), the claims topic {names.claims} has {partitions}: "
        "keyed topics of one deployment must have the same count",
        (
            *grow,
            f"kafka-topics.sh --bootstrap-server {bootstrap} --delete --topic {topic}   "
            "(its records are lost; the worker creates it again)",
        ),
    )


def merged_overrides(overrides: Mapping[str, str], fixes: list[Fix]) -> dict[str, str]:
    """The topic's overrides after `fixes`: what a whole-set AlterConfigs request must carry.

    The non-incremental AlterConfigs request (the one aiokafka has) replaces every
    override of the topic, so the ones already set are sent again with the fixes.
    """
    return {**overrides, **{f.key: f.value for f in fixes}}


class MissingTopic(RuntimeError):
    """A client's topic does not exist: no worker runs with its prefix on that broker."""


async def require_topics(bootstrap: str | None, prefix: str, topics: list[str]) -> None:
    """Raise `MissingTopic` unless every one of `topics` exists on the broker.

    Asked with the admin client's metadata request for every topic, which never creates
    one: a producer's metadata request for a missing topic makes the broker auto-create it
    (one partition, CreateTime) where auto-creation is on, and a worker would then adopt
    that topic. Clients ask this before they produce.
    """
    admin = kafka.admin(bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
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
    `TopicsRefused` naming the commands to run. The admin client has the CLAIMWATCH_*
    security settings, like every client of ours.
    """
    admin = kafka.admin(bootstrap)
    await admin.start()
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
    return None


def _error(answer: Mapping[str, Any]) -> str:
    """A broker error of one resource, by name."""
    name = for_code(answer["error_code"]).__name__
    return f"{name}: {answer['error_message']}" if answer.get("error_message") else name
