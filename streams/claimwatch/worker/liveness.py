"""What /health reports: recovery, agents that are not running, a broker that stopped answering.

Also the crash budget: an agent that crashes more than `limit` times within `window_s`
makes the worker stop with a non-zero exit code, so that a supervisor restarts the process
instead of Faust restarting the agent forever. Time is injected (`clock`).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from claimwatch.worker.faust_private import agent_actors

Clock = Callable[[], float]


@dataclass(slots=True)
class CrashBudget:
    """Crashes per agent within a sliding window; `exceeded` once one agent has too many."""

    limit: int = 3
    window_s: float = 300.0
    clock: Clock = time.monotonic
    _crashes: dict[str, collections.deque[float]] = field(default_factory=dict)
    #: the agent whose crashes exceeded the budget, once one has
    exceeded: str | None = None

    def crashed(self, agent: str) -> bool:
        """Record a crash of `agent`; True when this one exceeds the budget."""
        now = self.clock()
        times = self._crashes.setdefault(agent, collections.deque())
        times.append(now)
        while times and times[0] < now - self.window_s:
            times.popleft()
        if len(times) > self.limit and self.exceeded is None:
            self.exceeded = agent
            return True
        return False

    def recent(self, within_s: float) -> list[str]:
        """Agents that crashed within the last `within_s` seconds."""
        now = self.clock()
        return sorted(a for a, t in self._crashes.items() if t and t[-1] >= now - within_s)


@dataclass(slots=True)
class BrokerWatch:
    """When the broker last answered; unreachable once it has not for `timeout_s`."""

    timeout_s: float = 30.0
    clock: Clock = time.monotonic
    last_ok: float | None = None
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def answered(self) -> None:
        """The broker answered a request just now."""
        self.last_ok = self.clock()

    def silent_for(self) -> float:
        """Seconds since the broker last answered (since start, when it never has)."""
        return self.clock() - (self.last_ok if self.last_ok is not None else self.started)

    def unreachable(self) -> bool:
        return self.silent_for() > self.timeout_s


def agent_problems(agents: Iterable[Any]) -> list[str]:
    """A reason for each Faust agent that is not running (crashed, stopped, no actor)."""
    reasons = []
    for agent in agents:
        name = agent.name.rsplit(".", 1)[-1]
        if agent.crashed:
            reasons.append(f"agent {name} crashed: {agent.crash_reason!r}")
        elif agent.should_stop or not agent.started:
            reasons.append(f"agent {name} is not running")
        else:
            actors = agent_actors(agent)
            if not actors or any(actor.crashed or actor.should_stop for actor in actors):
                reasons.append(f"agent {name} is not running (actor stopped or crashed)")
    return reasons


def health_reasons(
    *,
    recovering: bool,
    agents: Iterable[Any],
    budget: CrashBudget,
    broker: BrokerWatch,
    crash_memory_s: float = 30.0,
) -> list[str]:
    """Every reason the worker is not healthy right now (empty: healthy)."""
    reasons = []
    if recovering:
        reasons.append("recovering: partitions are being assigned or tables restored")
    reasons += agent_problems(agents)
    reasons += [
        f"agent {a} crashed in the last {crash_memory_s:.0f}s"
        for a in budget.recent(crash_memory_s)
    ]
    if broker.unreachable():
        reasons.append(
            f"broker unreachable for {broker.silent_for():.0f}s "
            f"(limit {broker.timeout_s:.0f}s, --health-broker-timeout)"
        )
    return reasons
