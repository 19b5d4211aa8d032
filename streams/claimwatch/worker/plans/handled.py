"""What one record of plan blocking led to: records to send, counters, step statuses."""

from __future__ import annotations

from dataclasses import dataclass, field

from claimwatch.core.plans import StepStatus
from claimwatch.wire.topic_names import TopicNames
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.outgoing import Handled


@dataclass(slots=True)
class PlansHandled(Handled):
    """What one record led to: records to send, counters, and the step statuses emitted."""

    statuses: list[StepStatus] = field(default_factory=list)
    #: plans or facts whose handling raised and whose state was dropped (see `quarantine`)
    quarantined: int = 0

    def undecodable(
        self,
        names: TopicNames,
        origin: tuple[str, int, int],
        key: bytes | None,
        value: bytes,
        what: str,
        exc: ValueError,
    ) -> None:
        """Dead-letter a record that is not `what` (a plan update, a plan interest)."""
        self.events.append("plan_dead_letter")
        reason = f"not {what}: {type(exc).__name__}: {exc}"
        self.sends.append(dead_letter(names, origin, key, value, reason))
