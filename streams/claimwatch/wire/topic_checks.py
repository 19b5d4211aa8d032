"""What the worker fixes and what it refuses, of the deployment's topics as a broker has them.

Pure: the topics come in described (`TopicState`), the fixes and refusals go out; changing
a topic on the broker is `topics.ensure_topics`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from claimwatch.wire.topic_names import TopicNames, same_partitions, wanted_configs


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
