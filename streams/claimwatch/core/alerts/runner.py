"""Both detectors over a decision stream: per-field states routed by field, alerts in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimwatch.core.alerts.entry import DetectorEntry
from claimwatch.core.alerts.lag import ReplicaLag
from claimwatch.core.alerts.lag_state import LagState
from claimwatch.core.alerts.shape import Alert
from claimwatch.core.alerts.spike import ConflictSpike, SpikeState
from claimwatch.core.policy import CompiledPolicy


class AlertRunner:
    """Holds one spike and one lag state per field; for replays, tests and the worker's edge.

    Fed either whole decisions (`on_decision`: the runner follows each fact itself) or the
    entries the facts' own partitions made of them (`on_entry`, the worker's way).
    """

    def __init__(self, policy: CompiledPolicy) -> None:
        self.spike = ConflictSpike(policy.policy.alerts.conflict_spike)
        self.lag = ReplicaLag(policy)
        self.spikes: dict[str, SpikeState] = {}
        self.lags: dict[str, LagState] = {}

    def on_decision(self, decision: Mapping[str, Any], now_us: int) -> list[Alert]:
        """Feed one decision at clock time `now_us` to both detectors of its field."""
        name = str(decision["field"])
        spike, alerts = self.spike.step(self.spikes.get(name), decision, now_us)
        lag, more = self.lag.step(self.lags.get(name), decision, now_us)
        self.spikes[name], self.lags[name] = spike, lag
        return alerts + more

    def on_entry(self, name: str, entry: DetectorEntry) -> list[Alert]:
        """Feed one decision of field `name`, as its fact's partition summed it up."""
        now_us, key, entering, observations = entry
        spike = self.spikes.get(name) or SpikeState(name)
        lag = self.lags.get(name) or LagState(name)
        spike, alerts = self.spike.take(spike, entering, now_us)
        lag, more = self.lag.take(lag, key, observations, now_us)
        self.spikes[name], self.lags[name] = spike, lag
        return alerts + more

    def on_clock(self, now_us: int) -> list[Alert]:
        """Move every field's detectors to clock time `now_us` (closes windows, judges silence)."""
        alerts: list[Alert] = []
        for name in sorted(self.spikes):
            _, out = self.spike.advance(self.spikes[name], now_us)
            alerts += out
        for name in sorted(self.lags):
            _, out = self.lag.advance(self.lags[name], now_us)
            alerts += out
        return alerts
