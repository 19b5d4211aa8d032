"""AlertRuntime's table: one record per field plus one per followed fact, written when touched."""

from __future__ import annotations

from typing import Any

from streams.core.alerts.lag_state import LagState
from streams.core.alerts.runner import AlertRunner
from streams.core.alerts.spike import SpikeState
from streams.core.policy import CompiledPolicy
from streams.core.timeutil import parse_rfc3339
from streams.wire.codec import dumps
from streams.worker.alerts.edge import FACT_SEP, AlertRuntime
from streams.worker.edge import tick_value
from tests.support.alerts import REPLICA, Facts, lagging_changes, warm_up
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


def feed(runtime: AlertRuntime, facts: Facts, subjects: list[str], at: int) -> None:
    """Every subject's owner and replica answer at `at` (+1 s apart), then a tick."""
    for i, subject in enumerate(subjects):
        decision = facts.observe(
            subject, at + i * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid")
        )
        runtime.handle(runtime.home(FIELD), dumps(decision))
    runtime.handle(runtime.home(FIELD), tick_value(at + (len(subjects) + 3) * SECOND))


def fact_keys(table: dict[bytes, bytes]) -> set[str]:
    prefix = FIELD.encode() + FACT_SEP
    return {k[len(prefix) :].decode() for k in table if k.startswith(prefix)}


def test_each_followed_fact_has_its_own_record(policy: CompiledPolicy) -> None:
    """The field's record holds no facts; every fact the detector follows has one record."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    subjects = [f"invoice:s-{i}" for i in range(30)]

    feed(runtime, Facts(policy), subjects, T0)

    state = _state(runtime)[1]
    assert {f"{s}|{FIELD}" for s in subjects} == set(state.facts) == fact_keys(table)
    assert b'"facts"' not in table[FIELD.encode()]


def test_a_tick_rewrites_only_the_facts_touched_since_the_last(policy: CompiledPolicy) -> None:
    """Idle facts are not written again; the touched one is written once per tick."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    facts = Facts(policy)
    subjects = [f"invoice:t-{i}" for i in range(20)]
    feed(runtime, facts, subjects, T0)
    before = dict(table.writes)

    feed(runtime, facts, subjects[:1], T0 + 60 * SECOND)

    prefix = FIELD.encode() + FACT_SEP
    changed = {k for k, n in table.writes.items() if k.startswith(prefix) and n != before[k]}
    assert {prefix + f"{subjects[0]}|{FIELD}".encode()} == changed


def test_a_restarted_runtime_reads_back_the_same_state(policy: CompiledPolicy) -> None:
    """A new runtime over the same table holds the same detector state, facts in order."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    feed(runtime, Facts(policy), [f"invoice:r-{i}" for i in range(25)], T0)
    spike, lag = _state(runtime)

    restarted = AlertRuntime(policy, 4, table)
    again_spike, again_lag = _state(restarted)

    assert spike.to_obj() == again_spike.to_obj()
    assert lag.to_obj() == again_lag.to_obj()
    assert list(lag.facts) == list(again_lag.facts)


def test_forgotten_facts_lose_their_records(policy: CompiledPolicy) -> None:
    """When the detector forgets an idle fact, its record is deleted from the table."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    facts = Facts(policy)
    feed(runtime, facts, ["invoice:old"], T0)
    assert {f"invoice:old|{FIELD}"} == fact_keys(table)

    day = 24 * 3600 * SECOND
    feed(runtime, facts, ["invoice:new"], T0 + 2 * day)

    assert {f"invoice:new|{FIELD}"} == fact_keys(table)


def test_a_whole_state_record_of_an_earlier_version_is_split(policy: CompiledPolicy) -> None:
    """A field record that still holds its facts is read, then stored split at the next tick."""
    table = CountingTable()
    runtime = AlertRuntime(policy, 4, table)
    facts = Facts(policy)
    feed(runtime, facts, ["invoice:a", "invoice:b"], T0)
    spike, lag = _state(runtime)
    legacy: dict[str, Any] = {"spike": spike.to_obj(), "lag": lag.to_obj()}
    old = CountingTable()
    old[FIELD.encode()] = dumps(legacy)

    upgraded = AlertRuntime(policy, 4, old)
    upgraded.handle(upgraded.home(FIELD), tick_value(T0 + 10 * SECOND))

    assert {f"invoice:a|{FIELD}", f"invoice:b|{FIELD}"} == fact_keys(old)
    assert b'"facts"' not in old[FIELD.encode()]


def _state(runtime: AlertRuntime) -> tuple[SpikeState, LagState]:
    found = runtime.state_of(FIELD)
    assert found is not None
    return found


def test_the_live_edge_raises_what_the_replay_runner_raises(policy: CompiledPolicy) -> None:
    """Decisions and ticks through the worker's edge give AlertRunner's alerts, in its order."""
    recorded = Recorded(policy)
    subjects = [f"invoice:e-{i}" for i in range(8)]
    warm_up(recorded, subjects)
    lagging_changes(recorded, subjects, T0 + 400 * SECOND, "unpaid", "paid")
    runtime = AlertRuntime(policy, 4, CountingTable())
    runner = AlertRunner(policy)
    live: list[dict[str, Any]] = []
    replayed: list[dict[str, Any]] = []
    next_tick = T0
    for decision in recorded.decisions:
        now = parse_rfc3339(decision["decided_at"])
        while next_tick < now:  # the partition clock ticks every 10 s
            live += runtime.handle(runtime.home(FIELD), tick_value(next_tick)).alerts
            replayed += runner.on_clock(next_tick)
            next_tick += 10 * SECOND
        live += runtime.handle(runtime.home(FIELD), dumps(decision)).alerts
        replayed += runner.on_decision(decision, now)
    for _ in range(60):  # and on, until the replica is judged
        live += runtime.handle(runtime.home(FIELD), tick_value(next_tick)).alerts
        replayed += runner.on_clock(next_tick)
        next_tick += 10 * SECOND
    assert [] != replayed
    assert replayed == live


class Recorded:
    """Decisions made through `Facts`, kept in order (observes like `Feed`)."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.facts = Facts(policy)
        self.decisions: list[dict[str, Any]] = []

    def observe(self, subject: str, at: int, *answers: tuple[str, ...]) -> dict[str, Any]:
        decision = self.facts.observe(subject, at, *answers)
        self.decisions.append(decision)
        return decision
