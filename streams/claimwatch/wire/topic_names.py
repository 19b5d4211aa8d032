"""The deployment's topics: their names (with the configurable prefix) and the settings needed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, overload

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


#: The timestamp type of topics whose record times the worker trusts.
LOG_APPEND_TIME: Final = "LogAppendTime"


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
