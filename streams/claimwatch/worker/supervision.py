"""Agent supervision: every crash of an agent function is counted and held to a budget."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from claimwatch.worker.liveness import CrashBudget
from claimwatch.worker.metrics import Metrics

AgentFun = Callable[[Any], Awaitable[None]]
Supervise = Callable[[str], Callable[[AgentFun], AgentFun]]


def supervisor(
    metrics: Metrics, budget: CrashBudget, exceeded: Callable[[str], None]
) -> Callable[[str], Callable[[AgentFun], AgentFun]]:
    """A decorator factory counting the crashes of an agent function (Faust restarts it).

    An exception that leaves an agent is counted in claimwatch_agent_crashes_total and in
    the crash budget; past the budget `exceeded` is called (the worker then stops with a
    non-zero exit code, for its supervisor to restart it).
    """

    def supervise(name: str) -> Callable[[AgentFun], AgentFun]:
        metrics.agent_crashes.labels(name)  # at 0 from the start, for the paging rules

        def wrap(fun: AgentFun) -> AgentFun:
            @functools.wraps(fun)
            async def agent(stream: Any) -> None:
                try:
                    await fun(stream)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    metrics.agent_crashes.labels(name).inc()
                    if budget.crashed(name):
                        exceeded(name)
                    raise

            return agent

        return wrap

    return supervise
