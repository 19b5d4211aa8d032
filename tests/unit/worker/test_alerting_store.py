"""AlertRuntime's table: one record per field, written at a tick only when it changed."""

from __future__ import annotations

from typing import Any

from claimwatch.core.alerts.entry import DetectorEntry
from claimwatch.core.alerts.lag_state import FactTrack, LagState
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.alerts.spike import SpikeState
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.wire.codec import dumps
from claimwatch.worker.alerts.edge import FACT_SEP, AlertRuntime
from claimwatch.worker.ticks import tick_value

from tests.support.alerts import REPLICA, Entries, Facts, lagging_changes, warm_up
from tests.support.clocks import SECOND, T0

FIELD = "payment_status"


class CountingTable(dict[bytes, bytes]):
    """A dict table that counts the writes of each key (what its changelog would carry)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: dict[bytes, int] = {}

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.writes[key] = self.writes.get(key, 0) + 1
        super().__setitem__(key, value)


def entries_record(entries: list[DetectorEntry]) -> bytes:
    """One alerts-input record of the field's entries, as the claims agent sends them."""
    return dumps({"field": FIELD, "entries": entries})


def feed(runtime: AlertRuntime, facts: Facts, subjects: list[str], at: int) -> None:
    """Every subject's owner and replica answer at `at` (+1 s apart): one record, a tick."""
    made = Entries(facts.policy)
    entries = []
    for i, subject in enumerate(subjects):
        decision = facts.observe(
            subject, at + i * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid")
        )
        entries.append(made.of(decision, parse_rfc3339(decision["decided_at"])))
    runtime.handle(runtime.home(FIELD), entries_record(entries))
    runtime.handle(runtime.home(FIELD), tick_value(at + (len(subjects) + 3) * SECOND))


def test_the_field_record_is_the_only_one(policy: CompiledPolicy) -> None:
    """The detectors keep one record per field and follow no fact: facts live elsewhere."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)

    feed(runtime, Facts(policy), [f"invoice:s-{i}" for i in range(30)], T0)

    assert [FIELD.encode()] == list(table)
    assert {} == _state(runtime)[1].facts


def test_a_tick_writes_the_field_only_when_it_changed(policy: CompiledPolicy) -> None:
    """Ticks that only move the clock write nothing; the next entries are written once."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    facts = Facts(policy)
    feed(runtime, facts, ["invoice:a", "invoice:b"], T0)
    written = table.writes[FIELD.encode()]

    for n in range(1, 4):
        runtime.handle(runtime.home(FIELD), tick_value(T0 + (10 + n) * SECOND))
    quiet = table.writes[FIELD.encode()]
    feed(runtime, facts, ["invoice:a"], T0 + 20 * SECOND)

    assert (written, written + 1) == (quiet, table.writes[FIELD.encode()])


def test_a_restarted_runtime_reads_back_the_same_state(policy: CompiledPolicy) -> None:
    """A new runtime over the same table holds the same detector state."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    feed(runtime, Facts(policy), [f"invoice:r-{i}" for i in range(25)], T0)
    spike, lag = _state(runtime)

    restarted = AlertRuntime(policy, 4, table)
    again_spike, again_lag = _state(restarted)

    assert spike.to_obj() == again_spike.to_obj()
    assert lag.to_obj() == again_lag.to_obj()


def test_an_earlier_versions_fact_records_are_dropped(policy: CompiledPolicy) -> None:
    """Facts an earlier version followed in the field's record or apart are dropped on load."""
    runtime = AlertRuntime(policy, 4, CountingTable())
    feed(runtime, Facts(policy), ["invoice:a", "invoice:b"], T0)
    spike, lag = _state(runtime)
    lag.facts = {"invoice:a|payment_status": FactTrack(touched=T0)}
    old = CountingTable()
    old[FIELD.encode()] = dumps({"spike": spike.to_obj(), "lag": lag.to_obj()})
    old[FIELD.encode() + FACT_SEP + b"invoice:b|payment_status"] = dumps(
        FactTrack(touched=T0).to_obj()
    )

    upgraded = AlertRuntime(policy, 4, old)
    upgraded.handle(upgraded.home(FIELD), tick_value(T0 + 10 * SECOND))

    assert [FIELD.encode()] == list(old)
    assert b'"facts"' not in old[FIELD.encode()]


def _state(runtime: AlertRuntime) -> tuple[SpikeState, LagState]:
    found = runtime.state_of(FIELD)
    assert found is not None
    return found


def test_the_live_edge_raises_what_the_replay_runner_raises(policy: CompiledPolicy) -> None:
    """Entries and ticks through the worker's edge give AlertRunner's alerts of decisions."""
    recorded = lagging_replica(policy, "e")
    runtime = AlertRuntime(policy, 4, CountingTable())
    runner = AlertRunner(policy)
    made = Entries(policy)
    live: list[dict[str, Any]] = []
    replayed: list[dict[str, Any]] = []
    next_tick = T0
    pending: list[DetectorEntry] = []
    for decision in recorded.decisions:
        now = parse_rfc3339(decision["decided_at"])
        while next_tick < now:  # the partition clock ticks every 10 s; a record per tick
            if pending:
                live += runtime.handle(runtime.home(FIELD), entries_record(pending)).alerts
                pending = []
            live += runtime.handle(runtime.home(FIELD), tick_value(next_tick)).alerts
            replayed += runner.on_clock(next_tick)
            next_tick += 10 * SECOND
        pending.append(made.of(decision, now))
        replayed += runner.on_decision(decision, now)
    live += runtime.handle(runtime.home(FIELD), entries_record(pending)).alerts
    for _ in range(60):  # and on, until the replica is judged
        live += runtime.handle(runtime.home(FIELD), tick_value(next_tick)).alerts
        replayed += runner.on_clock(next_tick)
        next_tick += 10 * SECOND
    assert [] != replayed
    assert replayed == live


def test_an_earlier_versions_decision_records_are_still_understood(
    policy: CompiledPolicy,
) -> None:
    """An alerts-input record holding one decision (as before entries) is detected on."""
    recorded = lagging_replica(policy, "o")
    runtime = AlertRuntime(policy, 4, CountingTable())
    runner = AlertRunner(policy)
    live: list[dict[str, Any]] = []
    replayed: list[dict[str, Any]] = []
    for decision in recorded.decisions:
        now = parse_rfc3339(decision["decided_at"])
        live += runtime.handle(runtime.home(FIELD), dumps(decision)).alerts
        replayed += runner.on_decision(decision, now)
    end = parse_rfc3339(recorded.decisions[-1]["decided_at"])
    for n in range(60):
        live += runtime.handle(runtime.home(FIELD), tick_value(end + n * 10 * SECOND)).alerts
        replayed += runner.on_clock(end + n * 10 * SECOND)
    assert [] != replayed
    assert replayed == live


def lagging_replica(policy: CompiledPolicy, tag: str) -> Recorded:
    """Eight facts warmed up, then changed by the owner while the replica lags behind."""
    recorded = Recorded(policy)
    subjects = [f"invoice:{tag}-{i}" for i in range(8)]
    warm_up(recorded, subjects)
    lagging_changes(recorded, subjects, T0 + 400 * SECOND, "unpaid", "paid")
    return recorded


class Recorded:
    """Decisions made through `Facts`, kept in order (observes like `Feed`)."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.facts = Facts(policy)
        self.decisions: list[dict[str, Any]] = []

    def observe(self, subject: str, at: int, *answers: tuple[str, ...]) -> dict[str, Any]:
        decision = self.facts.observe(subject, at, *answers)
        self.decisions.append(decision)
        return decision
