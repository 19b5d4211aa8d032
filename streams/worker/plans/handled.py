"""What one record of plan blocking led to: records to send, counters, step statuses."""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.core.plans import StepStatus
from streams.worker.edge import Handled


@dataclass(slots=True)
class PlansHandled(Handled):
    """What one record led to: records to send, counters, and the step statuses emitted."""

    statuses: list[StepStatus] = field(default_factory=list)
    #: plans or facts whose handling raised and whose state was dropped (see `quarantine`)
    quarantined: int = 0
