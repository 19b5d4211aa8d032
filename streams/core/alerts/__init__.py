"""Alert detectors: pure, event-time state machines fed with decision records."""

from streams.core.alerts.lag import ReplicaLag
from streams.core.alerts.lag_state import LagState
from streams.core.alerts.runner import AlertRunner
from streams.core.alerts.shape import MAX_SAMPLE_IDS, Alert, alert_id
from streams.core.alerts.spike import ConflictSpike, SpikeState
from streams.core.alerts.stats import poisson_sf

__all__ = [
    "MAX_SAMPLE_IDS",
    "Alert",
    "AlertRunner",
    "ConflictSpike",
    "LagState",
    "ReplicaLag",
    "SpikeState",
    "alert_id",
    "poisson_sf",
]
