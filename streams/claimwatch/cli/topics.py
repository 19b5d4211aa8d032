"""Which topic a command reads or writes: the deployment's prefix applied to every name.

Every command that names a topic takes `--topic-prefix` (else CLAIMWATCH_TOPIC_PREFIX,
else `claimwatch.`), and a TOPIC argument that is a deployment topic's short name
(`decisions`) means that topic under the prefix.
"""

from __future__ import annotations

from claimwatch.wire.kafka import env_prefix
from claimwatch.wire.topic_names import TopicNames


def prefix_or_env(topic_prefix: str | None) -> str:
    """`--topic-prefix` when given, else CLAIMWATCH_TOPIC_PREFIX, else `claimwatch.`."""
    return topic_prefix if topic_prefix is not None else env_prefix()


def topic_named(name: str, prefix: str) -> str:
    """The topic a `--from`/`--diff-against` TOPIC names under the deployment's prefix.

    A deployment topic's short name (`decisions`, `claims.dlq`...) is that topic under the
    prefix; any other name (a topic of your own, or a full name) is used as it is.
    """
    return prefix + name if prefix + name in TopicNames(prefix).every() else name
