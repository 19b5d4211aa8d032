"""What one step of a claims partition produces: its decisions, dead letters and set-aside facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claimwatch.core.alerts.entry import DetectorEntry
from claimwatch.core.claim import Claim


@dataclass(slots=True)
class Decided:
    """A decision whose id differs from the fact's previous one. Never changed once made.

    Not declared frozen: every decision would pay for it (see `Claim`).
    """

    record: dict[str, Any]
    previous_outcome: str | None
    previous_id: str | None
    #: re-sent after a restart because its first sending may not have reached the log
    again: bool = False
    #: what the detectors need of it (made when the processor feeds detectors)
    alert: DetectorEntry | None = None

    @property
    def conflict_event(self) -> str | None:
        """`entered` or `left` when the fact enters or leaves conflict with this decision."""
        now = self.record["outcome"] == "conflict"
        before = self.previous_outcome == "conflict"
        if now and not before:
            return "entered"
        if before and not now:
            return "left"
        return None


@dataclass(slots=True)
class Quarantined:
    """A fact whose checking, deciding, pruning or storing raised, and what became of it.

    It was decided `rejected` (`record`, also among the step's decisions), its state dropped;
    its `claims` are to be dead-lettered with the `reason`. `error` is the exception, for
    the edge to log once with its traceback.
    """

    key: str
    field: str
    reason: str
    claims: list[Claim]
    error: BaseException
    record: dict[str, Any]


@dataclass(slots=True)
class StepResult:
    """What one input record produced."""

    decisions: list[Decided] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    #: facts set aside because handling them raised (see `PartitionProcessor.quarantine`)
    quarantined: list[Quarantined] = field(default_factory=list)
