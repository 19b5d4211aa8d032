"""The alert detectors run over replayed decisions (`claimwatch replay --alerts`)."""

from __future__ import annotations

from typing import Any

from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339


def replay_alerts(policy: CompiledPolicy, decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the alert detectors over replayed decisions in clock order (`--alerts`).

    The live worker moves its detectors with each partition's ticks; a replay moves them with
    the decisions' own times, so alerts that only a quiet stretch would raise (silence) can
    come out later, at the next decision, than they did live.
    """
    runner = AlertRunner(policy)
    timed = sorted((parse_rfc3339(d["decided_at"]), n, d) for n, d in enumerate(decisions))
    alerts: list[dict[str, Any]] = []
    for at, _, decision in timed:
        alerts += [dict(a) for a in runner.on_clock(at)]
        alerts += [dict(a) for a in runner.on_decision(decision, at)]
    return alerts
