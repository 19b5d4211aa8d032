"""Topic names (with the configurable prefix), their settings, and creating them on a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from dataclasses import dataclass
from typing import Final

from aiokafka.partitioner import murmur2

#: Retention of the claims topic: unlimited, so every stream can be replayed.
UNLIMITED: Final = "-1"


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Every topic of one deployment, by role."""

    prefix: str = "claimwatch."

    @property
    def claims(self) -> str:
        return f"{self.prefix}claims"

    @property
    def decisions(self) -> str:
        return f"{self.prefix}decisions"

    @property
    def resolutions(self) -> str:
        return f"{self.prefix}resolutions"

    @property
    def conflicts(self) -> str:
        return f"{self.prefix}conflicts"

    @property
    def alerts(self) -> str:
        return f"{self.prefix}alerts"

    @property
    def alerts_input(self) -> str:
        """Decisions re-keyed by field, and partition clocks, for the alert detectors."""
        return f"{self.prefix}alerts.input"

    @property
    def dlq(self) -> str:
        return f"{self.prefix}claims.dlq"

    @property
    def verdicts(self) -> str:
        """Signals of policy checks, keyed by request id."""
        return f"{self.prefix}verdicts"

    @property
    def verdicts_decisions(self) -> str:
        """One decision per request, keyed by request id."""
        return f"{self.prefix}verdicts.decisions"

    @property
    def publish(self) -> str:
        """Document publish and append requests, keyed by path."""
        return f"{self.prefix}publish"

    @property
    def publish_results(self) -> str:
        """One result per document request, keyed by path."""
        return f"{self.prefix}publish.results"

    def per_path(self) -> list[str]:
        """Topics keyed by document path, with the claims topic's partition count."""
        return [self.publish, self.publish_results]

    @property
    def plans(self) -> str:
        """Plans (steps and the facts they read), keyed by plan id."""
        return f"{self.prefix}plans"

    @property
    def plans_steps(self) -> str:
        """The status of each plan step, keyed by plan id."""
        return f"{self.prefix}plans.steps"

    @property
    def plans_interest(self) -> str:
        """Internal: a plan starts or stops reading a fact; keyed by fact key."""
        return f"{self.prefix}plans.interest"

    @property
    def plans_updates(self) -> str:
        """Internal: a fact's current decision for one plan reading it; keyed by plan id."""
        return f"{self.prefix}plans.updates"

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


async def ensure_topics(
    bootstrap: str, names: TopicNames, partitions: int, **client: object
) -> None:
    """Create the deployment's topics when missing; refuse a claims topic of another size."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [*names.per_fact(), *names.per_request(), *names.per_path(), names.alerts]
        wanted += names.per_plan()
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
