"""The edge between the alerts-input stream and the pure detectors: state per field, ticks.

Each claims partition sums its decisions up where their facts live (`core.alerts.entry`:
the fact's replica-lag track is kept beside its state) and sends, per batch of claims, one
record of entries per field to the field's alerts-input partition; so one partition sees
every decision of a field whatever claims partition decided it. The claims agent forwards
its partition clock there as tick records. A field's detector state is written to the
table at a tick (about once a second) when it changed, not on every decision: after a
crash the detectors may have missed up to a second of decisions, which moves a statistical
alert very little. An input record holding one whole decision is understood too.
No Faust here: the agent hands in records and a table, and sends what comes back.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from claimwatch.core.alerts.entry import EntryError, entries_from_obj, field_name
from claimwatch.core.alerts.lag_state import LagState
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.alerts.shape import Alert
from claimwatch.core.alerts.spike import SpikeState
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.wire.codec import dumps, loads
from claimwatch.wire.topics import partition_for
from claimwatch.worker.ticks import tick_time

#: Separates a field from one of its facts in the keys of per-fact detector records, a
#: table layout this edge does not write and drops when the field is loaded.
FACT_SEP = b"\x00fact\x00"
#: Largest stored field state: below the producer's 1 MB request limit. The detectors'
#: bounds keep a state far below it; one past it is reset (and counted) instead of sent.
MAX_STATE_BYTES: Final = 900_000

log = logging.getLogger(__name__)


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
    #: fields whose state raised or outgrew its bound, and was reset (see `_isolated`)
    quarantined: int = 0
    #: why the record is not an alerts input (it goes to the DLQ); None when it is one
    rejected: str | None = None


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

        The same scan drops per-fact records kept beside them (`FACT_SEP` keys): the facts
        live beside their own states.
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

        Facts the lag detector follows, found in the field's state (or one per table key,
        see `_known`), are dropped: they live beside the facts' own states (the lag
        detector then meets each fact's owner value afresh).
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

    def _store(self, field: str, spike: SpikeState, lag: LagState) -> bool:
        """Write a field's state when it changed since it was last stored (but for clocks).

        False (nothing written) when the state is past MAX_STATE_BYTES.

        A clock only moves on, and the next tick or entry moves it again: a stored state
        whose clock is behind is restored to the same detectors.
        """
        obj = {"spike": spike.to_obj(), "lag": lag.to_obj(facts=False)}
        bare = _bare(obj)
        if self._stored.get(field) == bare:
            return True
        body = dumps(obj)
        if len(body) > MAX_STATE_BYTES:
            log.error(
                "detector state of field %r has %d bytes, over %d: it is reset",
                field[:200],
                len(body),
                MAX_STATE_BYTES,
            )
            return False
        self.table[field.encode()] = body
        self._stored[field] = bare
        return True

    def handle(self, partition: int, value: bytes) -> AlertBatch:
        """One alerts-input record: a field's entries, a tick, or one whole decision.

        A record that does not validate is answered with `rejected` (the agent dead-letters
        it); whatever raises while one field is handled resets that field alone.
        """
        at = tick_time(value)
        if at is not None:
            return self.tick(partition, at)
        try:
            obj: Any = loads(value)
            if isinstance(obj, dict) and "entries" in obj:
                name, entries = entries_from_obj(obj)
            else:
                name, entries = _legacy_field(obj), []
        except ValueError as exc:
            return AlertBatch(rejected=f"not an alerts input: {type(exc).__name__}: {exc}")
        batch = AlertBatch()
        runner = self._runner(partition)

        def feed() -> None:
            self._load(runner, name)
            self._known(partition).add(name)
            if entries or "entries" in obj:
                for entry in entries:
                    batch.alerts += runner.on_entry(name, entry)
            else:
                decision = {**obj, "field": name}  # (its field clipped, as the state's)
                batch.alerts += runner.on_decision(decision, parse_rfc3339(obj["decided_at"]))

        self._isolated(runner, name, feed, batch)
        return batch

    def _isolated(
        self, runner: AlertRunner, name: str, work: Callable[[], None], batch: AlertBatch
    ) -> None:
        """Run one field's work; when it raises, reset that field's state alone and count it."""
        try:
            work()
        except Exception as exc:
            log.error("detector state of field %r raised; it is reset", name[:200], exc_info=exc)
            self._reset(runner, name)
            batch.quarantined += 1

    def _reset(self, runner: AlertRunner, name: str) -> None:
        """Forget a field's detector state, in memory and in the table."""
        runner.spikes.pop(name, None)
        runner.lags.pop(name, None)
        self._stored.pop(name, None)
        try:
            self.table.pop(name.encode(), None)
        except Exception:
            log.exception("dropping the stored detector state of %r failed", name[:200])

    def tick(self, partition: int, at_us: int) -> AlertBatch:
        """Move the detectors of this partition's fields to `at_us` (each field on its own).

        The alerts come as `AlertRunner.on_clock` orders them: the spike alerts of every
        field, then the lag alerts.
        """
        runner = self._runner(partition)
        batch = AlertBatch()
        for name in sorted(self._known(partition)):
            self._isolated(runner, name, functools.partial(self._load, runner, name), batch)
        lag_alerts: list[Alert] = []
        for name in sorted(runner.spikes):
            work = functools.partial(self._tick_field, runner, name, at_us, batch, lag_alerts)
            self._isolated(runner, name, work, batch)
        batch.alerts += lag_alerts
        return batch

    def _tick_field(
        self,
        runner: AlertRunner,
        name: str,
        at_us: int,
        batch: AlertBatch,
        lag_alerts: list[Alert],
    ) -> None:
        """Move one field's detectors to `at_us`; its figures; store it when it changed."""
        spike, lag_state = runner.spikes[name], runner.lags[name]
        spiked = runner.spike.advance(spike, at_us)[1]
        lagged = runner.lag.advance(lag_state, at_us)[1]
        lag_detector = runner.lag
        horizon = (lag_state.clock or at_us) - lag_detector.eval_us
        figures = []
        for source in sorted(lag_state.sources):
            track = lag_state.sources[source]
            seen = track.figures(horizon, lag_detector.bucket_us)
            figures.append(
                SourceFigures(
                    name, source, track.status, seen["lag_seconds"]["max"], seen["dissent_ratio"]
                )
            )
        if not self._store(name, spike, lag_state):
            raise StateTooLarge(
                f"the detector state of {name[:200]!r} is past {MAX_STATE_BYTES} bytes"
            )
        batch.alerts += spiked
        lag_alerts += lagged
        batch.figures += figures


class StateTooLarge(ValueError):
    """A field's detector state past MAX_STATE_BYTES (the field is reset)."""


def _legacy_field(obj: Any) -> str:
    """The field of a one-decision record (ValueError when none)."""
    if not isinstance(obj, dict):
        raise EntryError("not a JSON object")
    return field_name(obj.get("field"))


def _bare(obj: dict[str, Any]) -> bytes:
    """A stored field state with its clocks left out: what tells whether it changed."""
    return dumps({part: {**state, "clock": None} for part, state in sorted(obj.items())})
