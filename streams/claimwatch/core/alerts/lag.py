"""Replica-lag detector: lag of non-primary sources behind the field's owner, from claims."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from claimwatch.core.alerts.lag_fact import (
    BEHIND,
    CAUGHT_UP,
    DISSENT,
    STALE,
    Observation,
    id_tag,
    observe,
)
from claimwatch.core.alerts.lag_state import LagState, SourceTrack
from claimwatch.core.alerts.shape import Alert, alert_id, bounded_name, state_for
from claimwatch.core.claim import fact_key
from claimwatch.core.policy import CompiledPolicy, FieldRule
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.durations import UNTIL_EDITED
from claimwatch.models.policy import ReplicaLagAlert

KIND: Final = "replica_lag"
#: Facts followed per field; the least recently decided are forgotten beyond it.
MAX_FACTS: Final = 50_000
#: Non-owner sources judged per field: a new source past it is not followed (counted in
#: `LagState.dropped_sources`), so a field's state stays far below the producer's limit.
MAX_SOURCES: Final = 64
#: Facts remembered per source as served a value older than the budget (the oldest go).
MAX_BEHIND: Final = 256
#: A fact not decided for this long (or its freshness plus grace, if longer) is forgotten.
_DAY: Final = 86_400 * 1_000_000


class ReplicaLag:
    """Pure state machine: feed decisions of one field in clock order, get status alerts back.

    `step` and `advance` update the given state in place and return it with the alerts.
    Status per source, judged in this order: `silent` (no claim for longer than the
    evaluation window while the field kept being decided), `stalled` (serving values older
    than the budget on `min_samples` facts and not one catch-up in the window), `lagging`
    (most of the last `min_samples` conclusive lag samples and the facts it is still
    behind on above the budget, the latest within the window; it ends when at most a
    quarter are), else `ok`.
    """

    def __init__(self, policy: CompiledPolicy, config: ReplicaLagAlert | None = None) -> None:
        self.policy = policy
        self.config = config if config is not None else policy.policy.alerts.replica_lag
        self.eval_us = self.config.evaluation
        self.bucket_us = max(self.eval_us // 10, 1)

    def step(
        self, state: LagState | None, decision: Mapping[str, Any], now_us: int
    ) -> tuple[LagState, list[Alert]]:
        """Take in the new claims of one decision at clock time `now_us`.

        The field's state follows the fact itself here (`state.facts`), for a stream of
        decisions alone (replay, tests); the worker follows each fact beside its state and
        feeds `take` instead.
        """
        state = state_for(state, decision, LagState)
        if state.clock is None or now_us > state.clock:
            state.clock = now_us
        rule = self.policy.rule(state.field)
        key = bounded_name(fact_key(decision["subject"], state.field))
        fact, observations = observe(rule, state.facts.pop(key, None), decision, state.clock)
        state.facts[key] = fact
        while len(state.facts) > MAX_FACTS:
            del state.facts[next(iter(state.facts))]
        return self.take(state, key, observations, now_us)

    def advance(self, state: LagState, now_us: int) -> tuple[LagState, list[Alert]]:
        """Move the clock to `now_us`: judge silence and forget facts idle for too long."""
        if state.clock is None or now_us > state.clock:
            state.clock = now_us
        rule = self.policy.rule(state.field)
        idle = max(4 * self.eval_us, min(rule.freshness_us + rule.grace_us, _DAY))
        facts = state.facts
        while facts:
            key = next(iter(facts))
            if facts[key].touched >= state.clock - idle:
                break
            del facts[key]
        return state, self._evaluate(state, rule, state.clock)

    def take(
        self,
        state: LagState,
        key: str,
        observations: Sequence[Observation] | None,
        now_us: int,
    ) -> tuple[LagState, list[Alert]]:
        """Take in one decision of fact `key` as its own partition observed it (`lag_fact`)."""
        if state.clock is None or now_us > state.clock:
            state.clock = now_us
        rule = self.policy.rule(state.field)
        if observations is not None:
            self._apply(state, rule, key, observations, state.clock)
        return state, self._evaluate(state, rule, state.clock)

    # ------------------------------------------------------------------ observing

    def _apply(
        self,
        state: LagState,
        rule: FieldRule,
        key: str,
        observations: Sequence[Observation],
        now: int,
    ) -> None:
        """Count a decision that brought new claims, and what each of them showed."""
        state.decisions += 1
        tag = id_tag(key)  # what a source's `behind` keeps of the fact
        for source, at, flags, catch, mark in observations:
            track = state.sources.get(source)
            if track is None:
                if len(state.sources) >= MAX_SOURCES:
                    state.dropped_sources += 1
                    continue
                track = state.sources[source] = SourceTrack(last_claim=at, seen_at=0)
            track.last_claim = max(track.last_claim, at)
            track.seen_at = state.decisions
            horizon = now - self.eval_us
            track.tally(now, self.bucket_us, horizon, bool(flags & DISSENT), bool(flags & STALE))
            if catch is not None:
                lag, low, high = catch
                track.catch_up(at, lag, low, high, rule.freshness_us, self.config.min_samples)
            if mark == BEHIND:
                track.behind.pop(tag, None)
                track.behind[tag] = at
                while len(track.behind) > MAX_BEHIND:
                    del track.behind[next(iter(track.behind))]
            elif mark == CAUGHT_UP:
                track.behind.pop(tag, None)

    # ------------------------------------------------------------------ judging

    def _evaluate(self, state: LagState, rule: FieldRule, now: int) -> list[Alert]:
        alerts: list[Alert] = []
        for source, track in state.sources.items():
            status = self._status(state, track, now, rule.freshness_us)
            if status != track.status:
                alerts.append(self._alert(state, rule, source, track, status, now))
                if status == "ok":
                    track.verdicts.clear()  # back to ok: old evidence does not count again
                track.status = status
        return alerts

    def _status(self, state: LagState, track: SourceTrack, now: int, budget: int) -> str:
        config, horizon = self.config, now - self.eval_us
        if (
            now - track.last_claim > self.eval_us
            and state.decisions - track.seen_at >= config.silent_min_decisions
        ):
            return "silent"
        if track.behind:
            for key in [k for k, at in track.behind.items() if at < horizon]:
                del track.behind[key]
            if len(track.behind) >= config.min_samples and (
                track.last_catch_up is None or track.last_catch_up < horizon
            ):
                return "stalled"
        elif not any(verdict for _, verdict in track.verdicts):
            return "ok"  # nothing above the budget at all
        # Facts it is still behind on past the budget count as samples above it, too.
        over = [at for at, verdict in track.verdicts if verdict] + list(track.behind.values())
        judged = len(track.verdicts) + len(track.behind)
        # Enter on a majority above the budget; stay until at most a quarter is, or
        # until its most recent samples are all within the budget.
        share = 4 if track.status == "lagging" else 2
        if judged < config.min_samples or share * len(over) <= judged or max(over) < horizon:
            return "ok"
        latest = track.samples[-config.min_samples :]
        caught_up = (
            not track.behind
            and len(latest) == config.min_samples
            and all(lag <= budget and low <= budget for _, lag, low, _ in latest)
        )
        return "ok" if caught_up else "lagging"

    def _alert(
        self,
        state: LagState,
        rule: FieldRule,
        source: str,
        track: SourceTrack,
        status: str,
        now: int,
    ) -> Alert:
        start = format_rfc3339(now - self.eval_us)
        budget = rule.freshness_us
        alert: Alert = {
            "alert_id": alert_id(KIND, f"{state.field}|{source}", status, start),
            "kind": KIND,
            "status": status,
            "previous_status": track.status,
            "field": state.field,
            "source": source,
            "window_start": start,
            "window_end": format_rfc3339(now),
            "budget_seconds": budget / 1e6 if budget < UNTIL_EDITED else None,
        }
        alert.update(track.figures(now - self.eval_us, self.bucket_us))
        return alert
