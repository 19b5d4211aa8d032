"""Alert detectors: pure, event-time state machines fed with decision records."""

from claimwatch.core.alerts.lag import ReplicaLag
from claimwatch.core.alerts.lag_state import LagState
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.alerts.shape import MAX_SAMPLE_IDS, Alert, alert_id
from claimwatch.core.alerts.spike import ConflictSpike, SpikeState
from claimwatch.core.alerts.stats import poisson_sf

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
