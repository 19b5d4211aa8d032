"""The edge between verdict signal records and the pure verdicts step: decode, run, encode."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from schemas.verdict import VerdictSignal
from streams.core.argue.verdicts import RequestState, VerdictConfig, VerdictRunner
from streams.wire.codec import MAX_CLAIM_BYTES, decode_model, dumps
from streams.wire.topics import TopicNames
from streams.worker.edge import (
    TICK_KEY,
    Elsewhere,
    Handled,
    Outgoing,
    PerPartition,
    decode_at_home,
    stored_of,
    tick_time,
)

#: Table keys: one JSON state per request id, and one event clock per partition.
REQUEST_PREFIX: Final = b"r/"
CLOCK_PREFIX: Final = b"c/"


@dataclass(slots=True)
class VerdictsHandled(Handled):
    """What one record of the verdicts topic led to: records to send, counters, decisions."""

    decisions: list[dict[str, Any]] = field(default_factory=list)


def decode_signal(raw: bytes) -> VerdictSignal:
    """Parse one verdict signal; raise DecodeError with a reason a human can act on."""
    return decode_model(raw, VerdictSignal, "a verdict signal", MAX_CLAIM_BYTES)


class _TrackedRunner(VerdictRunner):
    """A runner that remembers which requests changed, so only those are written back."""

    def __init__(self, config: VerdictConfig, states: Iterator[RequestState]) -> None:
        super().__init__(config, states)
        self.touched: set[str] = set()

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
    """

    config: VerdictConfig
    names: TopicNames
    partitions: int
    table: MutableMapping[bytes, bytes]
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
        """The runner of a partition as the table holds it: its requests and its clock."""
        runner = _TrackedRunner(self.config, self.states_of(partition))
        raw = self.table.get(CLOCK_PREFIX + str(partition).encode())
        runner.clock_us = int(raw) if raw is not None else None
        return runner

    def states_of(self, partition: int) -> Iterator[RequestState]:
        """Every stored request of one partition."""
        for stored in stored_of(self.table, REQUEST_PREFIX, partition):
            yield RequestState.from_obj(stored["state"])

    def handle(
        self, partition: int, offset: int, key: bytes | None, value: bytes
    ) -> VerdictsHandled:
        """Process one record of the verdicts topic (a signal or a tick)."""
        out = VerdictsHandled()
        at = tick_time(value) if key == TICK_KEY else None
        runner = self.runner(partition)
        before = runner.clock_us
        if at is not None:
            out.events.append("verdict_tick")
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
            held = runner.requests.get(signal.request_id)
            dropped = held.dropped if held is not None else 0
            decisions = runner.on_signal(signal)
            out.events.append("verdict_signal")
            now = runner.requests.get(signal.request_id)
            if now is not None and now.dropped > dropped:
                out.events.append("verdict_dropped")
        self._store(runner, partition, before)
        for record in decisions:
            out.events.append("verdict_decided")
            out.decisions.append(record)
            rid = str(record["request_id"]).encode()
            out.sends.append(Outgoing(self.names.verdicts_decisions, rid, dumps(record), partition))
        return out

    def _store(self, runner: _TrackedRunner, partition: int, before: int | None) -> None:
        """Write back the changed requests and the moved clock (so to the changelog)."""
        for rid in sorted(runner.touched):
            key = REQUEST_PREFIX + rid.encode()
            state = runner.requests.get(rid)
            if state is not None:
                self.table[key] = dumps({"partition": partition, "state": state.to_obj()})
            elif key in self.table:
                del self.table[key]
        runner.touched.clear()
        if runner.clock_us is not None and runner.clock_us != before:
            self.table[CLOCK_PREFIX + str(partition).encode()] = str(runner.clock_us).encode()


def _request_key(signal: VerdictSignal) -> bytes:
    return signal.request_id.encode()
