"""Feed hostile records to a Runtime as Kafka would, and judge what came out of each."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from claimwatch.core.policy import CompiledPolicy
from claimwatch.policy.loading import parse_policy
from claimwatch.wire.codec import loads
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.claims.edge import Runtime

from tests.support.hostile import HostileMessage, hostile_policy_yaml

NAMES: Final = TopicNames("hostile.")
PARTITIONS: Final = 4


@functools.cache
def hostile_policy() -> CompiledPolicy:
    """The corpus policy, compiled (once)."""
    return CompiledPolicy(parse_policy(hostile_policy_yaml(), "<hostile>"))


def hostile_runtime() -> Runtime:
    """A Runtime over a plain dict table, as in tests/unit/worker/test_runtime.py."""
    return Runtime(hostile_policy(), NAMES, PARTITIONS, {})


@dataclass(slots=True)
class Outcome:
    """What one hostile record led to (its re-routed copy included)."""

    message: HostileMessage
    decisions: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    error: str | None = None

    def claim(self, claim_id: str | None) -> dict[str, Any] | None:
        """The record of a claim in this record's decisions."""
        found = [c for d in self.decisions for c in d["claims"] if c["claim_id"] == claim_id]
        return found[-1] if found else None

    def problem(self) -> str | None:
        """Why the outcome is not what the record expects (None when it is)."""
        m = self.message
        if self.error is not None:
            return f"raised {self.error}"
        if m.expect == "decided":
            record = self.claim(m.claim_id)
            if record is None:
                return f"no decision lists {m.claim_id!r} (events {self.events})"
            rejected = record["disposition"] == "rejected"
            if m.rejected is not None and rejected != m.rejected:
                return f"disposition {record['disposition']} ({record.get('error')})"
            if rejected and not self.dead_letters:
                return "rejected without a copy in the DLQ"
            return None
        if m.expect == "dead_letter":
            if not self.dead_letters:
                return f"no DLQ record (events {self.events})"
            return "decided as well" if self.claim(m.claim_id) is not None else None
        if self.dead_letters:
            return f"dead-lettered: {self.dead_letters}"
        wanted = "duplicate" if m.expect == "redelivery" else "bad_tick"
        return None if wanted in self.events else f"events {self.events}, not {wanted}"


def feed(runtime: Runtime, messages: Iterable[HostileMessage]) -> list[Outcome]:
    """Each record into its key's partition (null key: round robin), re-routed copies after."""
    outcomes = []
    offset = 0
    for index, message in enumerate(messages):
        outcome = Outcome(message)
        home = (
            partition_for(message.key, PARTITIONS)
            if message.key is not None
            else index % PARTITIONS
        )
        pending = [(home, message.key, message.value)]
        try:
            while pending:
                partition, key, value = pending.pop(0)
                handled = runtime.handle(partition, offset, key, value, message.timestamp_us)
                offset += 1
                outcome.events += handled.events
                for sent in handled.sends:
                    assert isinstance(sent.value, bytes)
                    if sent.topic == NAMES.claims:
                        pending.append((sent.partition or 0, sent.key, sent.value))
                    elif sent.topic == NAMES.dlq:
                        outcome.dead_letters.append(
                            dict(sent.headers)["claimwatch.reason"].decode()
                        )
                    elif sent.topic == NAMES.decisions:
                        outcome.decisions.append(loads(sent.value))
        except Exception as exc:  # the test reports it; the next record is fed as usual
            outcome.error = f"{type(exc).__name__}: {exc}"
        outcomes.append(outcome)
    return outcomes
