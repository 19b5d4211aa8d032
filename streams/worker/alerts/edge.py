"""The edge between the alerts-input stream and the pure detectors: state per field, ticks.

Decisions are re-keyed by field into `<prefix>alerts.input`, so one partition sees every
decision of a field whatever claims partition decided it; the claims agent forwards its
partition clock there as tick records. A field's detector state is written to the table
once per tick (about once a second), not on every decision: after a crash the detectors
may have missed up to a second of decisions, which moves a statistical alert very little
and keeps the changelog from carrying the whole state on every decision. The facts the
replica-lag detector follows (up to tens of thousands per field) are kept one per table
key (the field, NUL `fact` NUL, the fact key), and written only when a decision touched them, or
deleted when forgotten: one record per field would outgrow Kafka's message size limit on a
busy field, and rewrite every idle fact each second. No Faust here: the agent hands in
records and a table, and sends what comes back.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

from streams.core.alerts.lag_state import FactTrack, LagState
from streams.core.alerts.runner import AlertRunner
from streams.core.alerts.shape import Alert
from streams.core.alerts.spike import SpikeState
from streams.core.claim import fact_key
from streams.core.policy import CompiledPolicy
from streams.core.timeutil import parse_rfc3339
from streams.wire.codec import dumps, loads
from streams.wire.topics import partition_for
from streams.worker.edge import tick_time

#: Separates a field from one of its facts in the keys of the per-fact detector records.
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
    """Feeds decisions and ticks of one worker to the detectors, state in a bytes table.

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
        #: per field: facts a decision touched since the last store, and facts in the table
        self._touched: dict[str, set[str]] = {}
        self._written: dict[str, set[str]] = {}

    def home(self, field: str) -> int:
        """The alerts-input partition of a field."""
        return partition_for(field.encode(), self.partitions)

    def _known(self, partition: int) -> set[str]:
        fields = self._fields.get(partition)
        if fields is None:
            fields = {
                k.decode()
                for k in list(self.table)
                if FACT_SEP not in k and self.home(k.decode()) == partition
            }
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
        self._touched.clear()
        self._written.clear()

    def _load(self, runner: AlertRunner, field: str) -> None:
        """Give the runner the field's stored state, unless it holds it already (or none)."""
        if field in runner.spikes:
            return
        raw = self.table.get(field.encode())
        if raw is None:
            return
        obj = loads(raw)
        lag = LagState.from_obj(obj["lag"])
        if "facts" in obj["lag"]:  # written whole by an earlier version: split on next store
            self._touched[field] = set(lag.facts)
            self._written[field] = set()
        else:
            prefix = field.encode() + FACT_SEP
            tracks = [
                (key[len(prefix) :].decode(), FactTrack.from_obj(loads(value)))
                for key, value in list(self.table.items())
                if key.startswith(prefix)
            ]
            tracks.sort(key=lambda kv: (kv[1].touched, kv[0]))  # oldest first, as kept
            lag.facts = dict(tracks)
            self._written[field] = set(lag.facts)
        runner.spikes[field] = SpikeState.from_obj(obj["spike"])
        runner.lags[field] = lag

    def _store(self, field: str, spike: SpikeState, lag: LagState) -> None:
        """Write a field's state (the tick does, about once a second)."""
        self.table[field.encode()] = dumps(
            {"spike": spike.to_obj(), "lag": lag.to_obj(facts=False)}
        )
        prefix = field.encode() + FACT_SEP
        written = self._written.setdefault(field, set())
        for key in sorted(self._touched.pop(field, set())):
            track = lag.facts.get(key)
            if track is not None:
                self.table[prefix + key.encode()] = dumps(track.to_obj())
                written.add(key)
        for key in sorted(written - lag.facts.keys()):  # forgotten by the detector
            del self.table[prefix + key.encode()]
            written.discard(key)

    def handle(self, partition: int, value: bytes) -> AlertBatch:
        """One alerts-input record: a decision of a field, or a tick of a partition clock."""
        at = tick_time(value)
        if at is not None:
            return self.tick(partition, at)
        decision: dict[str, Any] = loads(value)
        field = str(decision["field"])
        runner = self._runner(partition)
        self._load(runner, field)
        alerts = runner.on_decision(decision, parse_rfc3339(decision["decided_at"]))
        self._touched.setdefault(field, set()).add(fact_key(decision["subject"], field))
        self._known(partition).add(field)
        return AlertBatch(alerts)

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
