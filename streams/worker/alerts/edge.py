"""The edge between the alerts-input stream and the pure detectors: state per field, ticks.

Each claims partition sums its decisions up where their facts live (`core.alerts.entry`:
the fact's replica-lag track is kept beside its state) and sends, per batch of claims, one
record of entries per field to the field's alerts-input partition; so one partition sees
every decision of a field whatever claims partition decided it. The claims agent forwards
its partition clock there as tick records. A field's detector state is written to the
table at a tick (about once a second) when it changed, not on every decision: after a
crash the detectors may have missed up to a second of decisions, which moves a statistical
alert very little. Records of earlier versions (one decision each) are still understood.
No Faust here: the agent hands in records and a table, and sends what comes back.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from streams.core.alerts.entry import entry_from_obj
from streams.core.alerts.lag_state import LagState
from streams.core.alerts.runner import AlertRunner
from streams.core.alerts.shape import Alert
from streams.core.alerts.spike import SpikeState
from streams.core.policy import CompiledPolicy
from streams.core.timeutil import parse_rfc3339
from streams.wire.codec import dumps, loads
from streams.wire.topics import partition_for
from streams.worker.edge import tick_time

#: Separated a field from one of its facts in the keys of an earlier version's per-fact
#: detector records (dropped when the field is loaded).
FACT_SEP = b"\x00fact\x00"


@dataclass(frozen=True, slots=True)
class SourceFigures:
    """The current figures of one source on one field, for the metrics."""

    field: str
    source: str
    status: str
    lag_seconds: float | None
    dissent_ratio: float


@dataclass(slots=True)
class AlertBatch:
    """Alerts raised by one record, and the source figures after a tick."""

    alerts: list[Alert] = field(default_factory=list)
    figures: list[SourceFigures] = field(default_factory=list)


class AlertRuntime:
    """Feeds decision entries and ticks of one worker to the detectors, state in a bytes table.

    Each alerts-input partition runs one `AlertRunner`, the detectors pair that replay and
    the detection-quality tests run too, over the fields whose home it is.
    """

    def __init__(
        self, policy: CompiledPolicy, partitions: int, table: MutableMapping[bytes, bytes]
    ) -> None:
        self.policy = policy
        self.partitions = partitions
        self.table = table
        self._fields: dict[int, set[str]] = {}
        self._runners: dict[int, AlertRunner] = {}
        #: per field: its state as last stored, clocks left out (unchanged: not written)
        self._stored: dict[str, bytes] = {}

    def home(self, field: str) -> int:
        """The alerts-input partition of a field."""
        return partition_for(field.encode(), self.partitions)

    def _known(self, partition: int) -> set[str]:
        """The fields of a partition in the table, read in one scan after each (re)start.

        The same scan drops the per-fact records an earlier version kept beside them (the
        facts now live beside their own states).
        """
        fields = self._fields.get(partition)
        if fields is None:
            fields = set()
            for key in list(self.table):
                field, legacy, _fact = key.partition(FACT_SEP)
                if self.home(field.decode()) != partition:
                    continue
                if legacy:
                    del self.table[key]
                else:
                    fields.add(field.decode())
            self._fields[partition] = fields
        return fields

    def _runner(self, partition: int) -> AlertRunner:
        runner = self._runners.get(partition)
        if runner is None:
            runner = self._runners[partition] = AlertRunner(self.policy)
        return runner

    def state_of(self, field: str) -> tuple[SpikeState, LagState] | None:
        """The detectors' state of a field (loaded from the table if need be), if any."""
        runner = self._runner(self.home(field))
        self._load(runner, field)
        if field not in runner.spikes:
            return None
        return runner.spikes[field], runner.lags[field]

    def forget(self) -> None:
        """After a rebalance the field index and the states are reloaded from the table."""
        self._fields.clear()
        self._runners.clear()
        self._stored.clear()

    def _load(self, runner: AlertRunner, field: str) -> None:
        """Give the runner the field's stored state, unless it holds it already (or none).

        An earlier version kept the facts the lag detector follows in the field's state (or
        one per table key, see `_known`); they now live beside the facts' own states, so
        they are dropped (the lag detector then meets each fact's owner value afresh).
        """
        if field in runner.spikes:
            return
        raw = self.table.get(field.encode())
        if raw is None:
            return
        obj = loads(raw)
        spike, lag = SpikeState.from_obj(obj["spike"]), LagState.from_obj(obj["lag"])
        if lag.facts:  # stored again without them at the next tick
            lag.facts = {}
        else:
            self._stored[field] = _bare(obj)
        runner.spikes[field], runner.lags[field] = spike, lag

    def _store(self, field: str, spike: SpikeState, lag: LagState) -> None:
        """Write a field's state when it changed since it was last stored (but for clocks).

        A clock only moves on, and the next tick or entry moves it again: a stored state
        whose clock is behind is restored to the same detectors.
        """
        obj = {"spike": spike.to_obj(), "lag": lag.to_obj(facts=False)}
        bare = _bare(obj)
        if self._stored.get(field) == bare:
            return
        self.table[field.encode()] = dumps(obj)
        self._stored[field] = bare

    def handle(self, partition: int, value: bytes) -> AlertBatch:
        """One alerts-input record: a field's entries, a tick, or an earlier version's decision."""
        at = tick_time(value)
        if at is not None:
            return self.tick(partition, at)
        obj: dict[str, Any] = loads(value)
        field = str(obj["field"])
        runner = self._runner(partition)
        self._load(runner, field)
        self._known(partition).add(field)
        if "entries" in obj:
            alerts = []
            for item in obj["entries"]:
                alerts += runner.on_entry(field, entry_from_obj(item))
            return AlertBatch(alerts)
        return AlertBatch(runner.on_decision(obj, parse_rfc3339(obj["decided_at"])))

    def tick(self, partition: int, at_us: int) -> AlertBatch:
        """Move the detectors of this partition's fields to `at_us`."""
        runner = self._runner(partition)
        for name in sorted(self._known(partition)):
            self._load(runner, name)
        batch = AlertBatch(runner.on_clock(at_us))
        lag_detector = runner.lag
        for name in sorted(runner.lags):
            lag_state = runner.lags[name]
            horizon = (lag_state.clock or at_us) - lag_detector.eval_us
            for source in sorted(lag_state.sources):
                track = lag_state.sources[source]
                figures = track.figures(horizon, lag_detector.bucket_us)
                batch.figures.append(
                    SourceFigures(
                        name,
                        source,
                        track.status,
                        figures["lag_seconds"]["max"],
                        figures["dissent_ratio"],
                    )
                )
            self._store(name, runner.spikes[name], lag_state)
        return batch


def _bare(obj: dict[str, Any]) -> bytes:
    """A stored field state with its clocks left out: what tells whether it changed."""
    return dumps({part: {**state, "clock": None} for part, state in sorted(obj.items())})
