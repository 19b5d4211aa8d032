"""Topic names (with the configurable prefix), their settings, and creating them on a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Final, overload

from aiokafka.admin import NewTopic
from aiokafka.errors import TopicAlreadyExistsError
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
        """Topic-level settings that differ from the broker's defaults."""
        return {
            # the broker's clock stamps each claim's arrival (see Runtime.handle_claim)
            self.claims: {"retention.ms": UNLIMITED, "message.timestamp.type": "LogAppendTime"},
            self.resolutions: {"cleanup.policy": "compact"},
        }


@functools.lru_cache(maxsize=131_072)
def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a key (murmur2, as the Java client)."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def misplaced(wanted: bytes, key: bytes | None, partition: int, partitions: int) -> int | None:
    """The home partition of a record that is not keyed `wanted` or not in its home, else None."""
    home = partition_for(wanted, partitions)
    return home if key != wanted or partition != home else None


async def ensure_topics(bootstrap: str, names: TopicNames, partitions: int) -> None:
    """Create the deployment's topics when missing; refuse a claims topic of another size.

    The admin client has the CLAIMWATCH_* security settings, like every client of ours.
    """
    admin = kafka.admin(bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = names.every()
        configs = names.configs()
        new = [
            NewTopic(
                name,
                partitions if name != names.alerts else 1,
                1,
                topic_configs=configs.get(name, {}),
            )
            for name in wanted
            if name not in existing
        ]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
        actual = 0
        for _ in range(50):  # a just-created topic may show no partitions for a moment
            described = await admin.describe_topics([names.claims])
            actual = len(described[0]["partitions"])
            if actual:
                break
            await asyncio.sleep(0.1)
        if actual != partitions:
            raise RuntimeError(
                f"topic {names.claims} has {actual} partitions, the worker is configured for "
                f"{partitions}: per-fact outputs must match the claims topic"
            )
    finally:
        await admin.close()
