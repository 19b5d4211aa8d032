"""The edge between verdict signal records and the pure verdicts step: decode, run, encode."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from claimwatch.core.argue.verdicts import (
    RequestState,
    VerdictConfig,
    VerdictRunner,
    internal_error_record,
)
from claimwatch.models.verdict import VerdictSignal
from claimwatch.wire.codec import MAX_CLAIM_BYTES, decode_model, dumps, loads
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.outgoing import Elsewhere, Handled, Outgoing
from claimwatch.worker.partition_state import PerPartition
from claimwatch.worker.routing import decode_at_home
from claimwatch.worker.ticks import TICK_KEY, tick_time, trusted_until

#: Table keys: one JSON state per request id, and one event clock per partition.
REQUEST_PREFIX: Final = b"r/"
CLOCK_PREFIX: Final = b"c/"
#: Largest stored request or decision record: below the producer's request limit (1 MB)
#: with room for the key and framing. The limits of `VerdictLimits` keep both far below it;
#: this is the last check before a value reaches the producer.
MAX_VALUE_BYTES: Final = 900_000

log = logging.getLogger(__name__)


@dataclass(slots=True)
class VerdictsHandled(Handled):
    """What one record of the verdicts topic led to: records to send, counters, decisions."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    #: requests set aside because handling them raised (each decided `internal_error`)
    quarantined: int = 0


def decode_signal(raw: bytes) -> VerdictSignal:
    """Parse one verdict signal; raise DecodeError with a reason a human can act on."""
    return decode_model(raw, VerdictSignal, "a verdict signal", MAX_CLAIM_BYTES)


class _TrackedRunner(VerdictRunner):
    """A runner that remembers which requests changed, so only those are written back."""

    def __init__(self, config: VerdictConfig, states: Iterator[RequestState]) -> None:
        super().__init__(config, states)
        self.touched: set[str] = set()
        #: stored values that could not be read back (dropped at the restore)
        self.unreadable: list[tuple[bytes, Exception]] = []

    def _keep(self, rid: str, state: RequestState | None) -> None:
        super()._keep(rid, state)
        self.touched.add(rid)


@dataclass(eq=False)
class VerdictsEdge:
    """Per-partition verdict runners over one bytes table; turns their output into records.

    No Faust here: the agent hands in records and sends what comes back. Signals that are not
    valid JSON verdict signals go to the dead-letter topic (`<prefix>claims.dlq`, with the
    same `claimwatch.*` headers as claims, `claimwatch.topic` naming the verdicts topic). A
    signal whose key is not its request id, or in another partition than the id's, is
    re-sent to its home partition first. Tick records move the partition's event clock.

    Clocks are bounded as the claims' are: a record's broker time (`timestamp_us`) moves the
    clock to it minus the lateness first; a tick later than its broker time minus the
    lateness only moves the clock that far; a malformed tick is ignored; nothing moves the
    clock past the wall clock plus the policy's `clock_skew` (`wall_clock_us`, injected by
    the worker; None in tests and replay); a signal observed beyond that is refused and
    named in its request's decision.
    """

    config: VerdictConfig
    names: TopicNames
    partitions: int
    table: MutableMapping[bytes, bytes]
    lateness_us: int = 1_000_000
    wall_clock_us: Callable[[], int] | None = None
    _runners: PerPartition[_TrackedRunner] = field(init=False)

    def __post_init__(self) -> None:
        self._runners = PerPartition(self._restored_runner)

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop in-memory runners (on rebalance, after recovery); rebuilt from the table."""
        self._runners.forget(partitions)

    def runner(self, partition: int) -> _TrackedRunner:
        """The runner of a partition, restored from the table on first use."""
        return self._runners[partition]

    def _restored_runner(self, partition: int) -> _TrackedRunner:
        """The runner of a partition as the table holds it: its requests and its clock.

        A stored request that cannot be read back is dropped (and reported by the next
        record); a stored clock that is not a number, or lies beyond the wall clock plus the
        skew (only a forged tick of an older release can put it there), is set back.
        """
        unreadable: list[tuple[bytes, Exception]] = []
        runner = _TrackedRunner(self.config, self._states_of(partition, unreadable))
        runner.unreadable = unreadable
        raw = self.table.get(CLOCK_PREFIX + str(partition).encode())
        clock = _int_or_none(raw)
        ceiling = self._ceiling()
        if clock is not None and ceiling is not None and clock > ceiling:
            clock = ceiling - self.config.clock_skew_us - self.lateness_us
        runner.clock_us = clock
        return runner

    def _states_of(
        self, partition: int, unreadable: list[tuple[bytes, Exception]]
    ) -> Iterator[RequestState]:
        """Every readable stored request of one partition; the unreadable ones are listed."""
        for key, raw in list(self.table.items()):
            if not key.startswith(REQUEST_PREFIX):
                continue
            try:
                stored = loads(raw)
                if stored["partition"] != partition:
                    continue
                state = RequestState.from_obj(stored["state"])
            except Exception as exc:
                unreadable.append((key, exc))
                continue
            yield state

    def _ceiling(self) -> int | None:
        """The latest record time trusted now: the wall clock plus the skew (None: no bound)."""
        return trusted_until(self.wall_clock_us, self.config.clock_skew_us)

    def handle(
        self,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes,
        timestamp_us: int | None = None,
    ) -> VerdictsHandled:
        """Process one record of the verdicts topic (a signal or a tick) and its broker time."""
        out = VerdictsHandled()
        runner = self.runner(partition)
        before = runner.clock_us
        self._drop_unreadable(runner, out)
        ceiling = self._ceiling()
        if key == TICK_KEY:
            at = self._tick(value, timestamp_us, ceiling, out)
            if at is None:
                return out
            decisions = runner.on_clock(at)
        else:
            origin = (self.names.verdicts, partition, offset)
            signal = decode_at_home(
                self.names, origin, key, value, decode_signal, _request_key, self.partitions,
                "verdict_",
            )  # fmt: skip
            if isinstance(signal, Elsewhere):
                out.elsewhere(signal)
                return out
            decisions = self._signal(runner, signal, timestamp_us, ceiling, out)
        for rid, exc in runner.quarantined:
            log.error(
                "deciding verdict request %r on %s[%d] raised; it is decided undecided "
                "(internal_error) and its state dropped",
                rid,
                self.names.verdicts,
                partition,
                exc_info=exc,
            )
            out.events.append("verdict_quarantined")
            out.quarantined += 1
        runner.quarantined.clear()
        self._store(runner, partition, before, out)
        for record in decisions:
            out.events.append("verdict_decided")
            body = self._bounded_record(runner, record, out)
            out.decisions.append(body)
            key_of = str(record["request_id"]).encode()
            out.sends.append(
                Outgoing(self.names.verdicts_decisions, key_of, dumps(body), partition)
            )
        return out

    def _tick(
        self, value: bytes, timestamp_us: int | None, ceiling: int | None, out: VerdictsHandled
    ) -> int | None:
        """The time a tick may move the clock to, or None for a malformed tick (ignored)."""
        at = tick_time(value)
        if at is None:
            out.events.append("verdict_bad_tick")
            return None
        bound = None if timestamp_us is None else timestamp_us - self.lateness_us
        if ceiling is not None:
            bound = ceiling if bound is None else min(bound, ceiling)
        if bound is not None and at > bound:
            out.events.append("verdict_bad_tick")
            at = bound
        out.events.append("verdict_tick")
        return at

    def _signal(
        self,
        runner: _TrackedRunner,
        signal: VerdictSignal,
        timestamp_us: int | None,
        ceiling: int | None,
        out: VerdictsHandled,
    ) -> list[dict[str, Any]]:
        """Add one decoded signal: its broker time moves the clock first, as a tick would."""
        decisions: list[dict[str, Any]] = []
        if timestamp_us is not None:
            stamp = timestamp_us if ceiling is None else min(timestamp_us, ceiling)
            decisions += runner.on_clock(stamp - self.lateness_us)
        held = runner.requests.get(signal.request_id)
        dropped = held.dropped if held is not None else 0
        refused = len(held.refused) if held is not None else 0
        decisions += runner.on_signal(signal, ceiling_us=ceiling)
        out.events.append("verdict_signal")
        now = runner.requests.get(signal.request_id)
        if now is not None and now.dropped > dropped:
            out.events.append("verdict_dropped")
        if now is not None and len(now.refused) > refused:
            out.events.append("verdict_refused")
        return decisions

    def _bounded_record(
        self, runner: _TrackedRunner, record: dict[str, Any], out: VerdictsHandled
    ) -> dict[str, Any]:
        """The record as sent: one too large for the producer becomes an internal error."""
        size = len(dumps(record))
        if size <= MAX_VALUE_BYTES:
            return record
        out.events.append("verdict_quarantined")
        out.quarantined += 1
        state = RequestState(str(record["request_id"]), 0, 0, record.get("request_type"))
        reason = (
            f"internal_error: RecordTooLarge: the decision record would take {size} bytes, "
            f"over {MAX_VALUE_BYTES}"
        )
        at = runner.clock_us if runner.clock_us is not None else 0
        return internal_error_record(self.config, state, at, reason)

    def _drop_unreadable(self, runner: _TrackedRunner, out: VerdictsHandled) -> None:
        """Delete the stored requests the restore could not read; log and count each once."""
        for key, exc in runner.unreadable:
            log.error("stored verdict request %r is unreadable; dropped", key, exc_info=exc)
            out.events.append("verdict_quarantined")
            out.quarantined += 1
            self.table.pop(key, None)
        runner.unreadable = []

    def _store(
        self, runner: _TrackedRunner, partition: int, before: int | None, out: VerdictsHandled
    ) -> None:
        """Write back the changed requests and the moved clock (so to the changelog).

        A request whose stored form cannot be made, or would be too large, is dropped from
        the table (logged and counted): it never reaches the producer.
        """
        for rid in sorted(runner.touched):
            key = REQUEST_PREFIX + rid.encode()
            state = runner.requests.get(rid)
            if state is None:
                self.table.pop(key, None)
                continue
            try:
                value = dumps({"partition": partition, "state": state.to_obj()})
                if len(value) > MAX_VALUE_BYTES:
                    raise ValueError(f"stored request of {len(value)} bytes")
            except Exception as exc:
                log.error("storing verdict request %r failed; dropped", rid, exc_info=exc)
                out.events.append("verdict_quarantined")
                out.quarantined += 1
                runner.requests.pop(rid, None)
                self.table.pop(key, None)
                continue
            self.table[key] = value
        runner.touched.clear()
        if runner.clock_us is not None and runner.clock_us != before:
            self.table[CLOCK_PREFIX + str(partition).encode()] = str(runner.clock_us).encode()


def _int_or_none(raw: bytes | None) -> int | None:
    """A stored clock, or None when absent or not a number."""
    if raw is None or not 0 < len(raw) <= 20:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _request_key(signal: VerdictSignal) -> bytes:
    return signal.request_id.encode()
