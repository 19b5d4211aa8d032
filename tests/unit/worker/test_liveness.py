"""What /health says: recovery, agents not running, a silent broker; the crash budget."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from claimwatch.worker.app import default_instance_id, state_dir
from claimwatch.worker.liveness import BrokerWatch, CrashBudget, agent_problems, health_reasons
from claimwatch.worker.settings import WorkerSettings
from claimwatch.worker.store import store_url


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeActor:
    crashed: bool = False
    should_stop: bool = False


@dataclass
class FakeAgent:
    name: str
    crashed: bool = False
    crash_reason: object = None
    should_stop: bool = False
    started: bool = True
    _actors: list[FakeActor] = field(default_factory=lambda: [FakeActor()])


def test_crash_budget_trips_on_the_fourth_crash_within_five_minutes() -> None:
    """Three crashes are tolerated; the fourth within the window exceeds the budget."""
    clock = FakeClock()
    budget = CrashBudget(clock=clock)
    results = []
    for _ in range(4):
        results.append(budget.crashed("claims"))
        clock.now += 60
    assert [False, False, False, True] == results
    assert "claims" == budget.exceeded


def test_crashes_spread_over_more_than_the_window_never_trip() -> None:
    """One crash every two minutes: never more than three in any five minutes."""
    clock = FakeClock()
    budget = CrashBudget(clock=clock)
    tripped = []
    for _ in range(10):
        tripped.append(budget.crashed("claims"))
        clock.now += 120
    assert not any(tripped)
    assert budget.exceeded is None


def test_crash_budget_is_per_agent() -> None:
    """Crashes of different agents do not add up."""
    budget = CrashBudget(clock=FakeClock())
    assert not any(budget.crashed(name) for name in ("a", "b", "c", "d", "a", "b", "c"))


def test_broker_watch_is_unreachable_only_after_its_timeout() -> None:
    """Silent for up to the timeout is fine; longer is unreachable; an answer resets it."""
    clock = FakeClock()
    broker = BrokerWatch(timeout_s=30, clock=clock)
    clock.now += 30
    assert not broker.unreachable()
    clock.now += 1
    assert broker.unreachable()
    broker.answered()
    assert not broker.unreachable()


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (FakeAgent("m.claims"), []),
        (FakeAgent("m.claims", crashed=True, crash_reason="E"), ["agent claims crashed: 'E'"]),
        (FakeAgent("m.claims", should_stop=True), ["agent claims is not running"]),
        (FakeAgent("m.claims", started=False), ["agent claims is not running"]),
        (
            FakeAgent("m.claims", _actors=[]),
            ["agent claims is not running (actor stopped or crashed)"],
        ),
        (
            FakeAgent("m.claims", _actors=[FakeActor(crashed=True)]),
            ["agent claims is not running (actor stopped or crashed)"],
        ),
    ],
)
def test_agent_problems_name_every_agent_that_does_not_run(
    agent: FakeAgent, expected: list[str]
) -> None:
    """Crashed, stopped, never started or without a live actor: each is a reason."""
    assert expected == agent_problems([agent])


def test_health_reasons_collect_every_problem() -> None:
    """Recovering, a recent crash and a silent broker are all reported at once."""
    clock = FakeClock()
    budget = CrashBudget(clock=clock)
    broker = BrokerWatch(timeout_s=5, clock=clock)
    budget.crashed("detect")
    clock.now += 10
    reasons = health_reasons(
        recovering=True, agents=[FakeAgent("x.detect")], budget=budget, broker=broker
    )
    assert 3 == len(reasons)
    assert reasons[0].startswith("recovering")
    assert "agent detect crashed in the last 30s" == reasons[1]
    assert reasons[2].startswith("broker unreachable for 10s")


def test_healthy_worker_has_no_reasons() -> None:
    """Recovered, agents running, broker answering: an empty list."""
    clock = FakeClock()
    broker = BrokerWatch(clock=clock)
    broker.answered()
    assert [] == health_reasons(
        recovering=False, agents=[FakeAgent("a")], budget=CrashBudget(clock=clock), broker=broker
    )


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("rocksdb://", "claimwatch-rocksdb://"),
        ("rocksdb:///var/lib/x", "claimwatch-rocksdb:///var/lib/x"),
        ("memory://", "memory://"),
    ],
)
def test_store_url_maps_rocksdb_to_the_healing_store(store: str, expected: str) -> None:
    """--store rocksdb:// is served by the store that wipes partitions Kafka disowns."""
    assert expected == store_url(store)


def test_state_dir_is_keyed_by_topic_prefix(tmp_path: object) -> None:
    """Two prefixes on one data directory never share local state."""
    base = WorkerSettings(policy_path=tmp_path, data_dir=tmp_path, prefix="a.")  # type: ignore[arg-type]
    other = WorkerSettings(policy_path=tmp_path, data_dir=tmp_path, prefix="b/")  # type: ignore[arg-type]
    assert state_dir(base) != state_dir(other)
    assert state_dir(other).is_dir()
    assert "b_" == state_dir(other).name


def test_default_instance_id_differs_by_port_and_app() -> None:
    """Workers on one host get distinct static member ids; a restart keeps its id."""
    one = WorkerSettings(policy_path=None, web_port=1, app_id="a")  # type: ignore[arg-type]
    two = WorkerSettings(policy_path=None, web_port=2, app_id="a")  # type: ignore[arg-type]
    assert default_instance_id(one) != default_instance_id(two)
    assert default_instance_id(one) == default_instance_id(one)
