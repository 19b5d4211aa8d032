"""Replica-lag detector: lag of non-primary sources behind the field's owner, from claims."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Final

from schemas.durations import UNTIL_EDITED
from schemas.policy import ReplicaLagAlert
from streams.core.alerts.lag_state import FactTrack, LagState, OwnerValue, SourceTrack
from streams.core.alerts.shape import Alert, alert_id, state_for
from streams.core.claim import fact_key
from streams.core.normalize import ABSENT, NormalizationError
from streams.core.policy import CompiledPolicy, FieldRule, is_owner
from streams.core.timeutil import TimestampError, format_rfc3339, parse_rfc3339

KIND: Final = "replica_lag"
#: Owner values remembered per fact (a source's claim is matched against any of them).
MAX_VALUES: Final = 4
#: Facts followed per field; the least recently decided are forgotten beyond it.
MAX_FACTS: Final = 50_000
#: A fact not decided for this long (or its freshness plus grace, if longer) is forgotten.
_DAY: Final = 86_400 * 1_000_000

Canon = Hashable


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
        """Take in the new claims of one decision at clock time `now_us`."""
        state = state_for(state, decision, LagState)
        if state.clock is None or now_us > state.clock:
            state.clock = now_us
        rule = self.policy.rule(state.field)
        self._observe(state, rule, decision, state.clock)
        return state, self._evaluate(state, rule, state.clock)

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

    # ------------------------------------------------------------------ observing

    def _observe(
        self, state: LagState, rule: FieldRule, decision: Mapping[str, Any], now: int
    ) -> None:
        key = fact_key(decision["subject"], state.field)
        fact = state.facts.pop(key, None) or FactTrack(touched=now)
        claims: Sequence[Mapping[str, Any]] = decision.get("claims") or ()
        known = set(fact.ids)
        new = [c for c in claims if c.get("claim_id") not in known]
        fact.ids = [str(c.get("claim_id")) for c in claims]
        fact.touched = now
        state.facts[key] = fact
        while len(state.facts) > MAX_FACTS:
            del state.facts[next(iter(state.facts))]
        if not new:
            return
        state.decisions += 1
        self._owner(rule, fact, decision, new)
        canons = [_canon(rule, v.status, v.value) for v in fact.values]
        for claim in new:
            self._claim(state, rule, key, fact, canons, claim, now)

    def _owner(
        self,
        rule: FieldRule,
        fact: FactTrack,
        decision: Mapping[str, Any],
        new: list[Mapping[str, Any]],
    ) -> None:
        """Record the owner's value when it won the decision; a different one is a change."""
        if decision.get("outcome") != "resolved":
            return
        claims = decision.get("claims") or ()
        winner = next((c for c in claims if c.get("disposition") == "won"), None)
        won = _claim_canon(rule, winner) if winner is not None else None
        if won is None:
            return
        agree = rule.normalizer.agree
        firsts = []
        for claim in new:
            if is_owner(rule, str(claim.get("source"))):
                at, canon = _time(claim), _claim_canon(rule, claim)
                if at is not None and canon is not None and agree(canon, won):
                    firsts.append((at, str(claim.get("claim_id")), claim))
        if not firsts:
            return
        at, _, first = min(firsts, key=lambda f: (f[0], f[1]))
        latest = max(f[0] for f in firsts)
        status, value = str(first.get("status")), first.get("value")
        if fact.values:
            newest = fact.values[-1]
            newest_canon = _canon(rule, newest.status, newest.value)
            if newest_canon is not None and agree(newest_canon, won):
                newest.last = max(newest.last, latest)
                return
            if at < newest.since:
                return
        change = bool(fact.values)
        fact.values.append(OwnerValue(status, value, at, latest, change))
        del fact.values[:-MAX_VALUES]

    def _claim(
        self,
        state: LagState,
        rule: FieldRule,
        key: str,
        fact: FactTrack,
        canons: list[Canon | None],
        claim: Mapping[str, Any],
        now: int,
    ) -> None:
        source = str(claim.get("source"))
        at = _time(claim)
        if at is None or is_owner(rule, source):
            return
        track = state.sources.get(source)
        if track is None:
            track = state.sources[source] = SourceTrack(last_claim=at, seen_at=state.decisions)
        track.last_claim = max(track.last_claim, at)
        track.seen_at = state.decisions
        disposition = claim.get("disposition")
        dissent = disposition == "outranked" and bool(claim.get("dissent"))
        track.tally(now, self.bucket_us, now - self.eval_us, dissent, disposition == "stale")
        canon = _claim_canon(rule, claim)
        if canon is None or not fact.values:
            return
        agree = rule.normalizer.agree
        match = -1
        for i in range(len(canons) - 1, -1, -1):
            known = canons[i]
            if known is not None and agree(canon, known):
                match = i
                break
        for i, value in enumerate(fact.values):
            if source in value.caught:
                continue
            if i <= match:
                value.caught.append(source)
                behind = value.behind.pop(source, 0)
                if i == match and value.change:
                    high = at - fact.values[i - 1].last if i > 0 else -1
                    lag, budget = max(0, at - value.since), rule.freshness_us
                    track.catch_up(at, lag, behind, high, budget, self.config.min_samples)
            elif value.change and at > value.since:
                gap = at - value.since
                if gap > value.behind.get(source, 0):
                    value.behind[source] = gap
                if gap > rule.freshness_us:
                    track.behind[key] = at
        if match == len(fact.values) - 1:
            track.behind.pop(key, None)

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


def _time(claim: Mapping[str, Any]) -> int | None:
    try:
        return parse_rfc3339(claim.get("observed_at"))
    except TimestampError:
        return None


def _claim_canon(rule: FieldRule, claim: Mapping[str, Any]) -> Canon | None:
    if claim.get("disposition") == "rejected":
        return None
    return _canon(rule, str(claim.get("status")), claim.get("value"))


def _canon(rule: FieldRule, status: str, value: Any) -> Canon | None:
    """The normalized value a claim compares by; None when it is no evidence or invalid."""
    if status == "not_found":
        return ABSENT
    if status != "ok":
        return None
    try:
        return rule.normalizer.canon(value)
    except (NormalizationError, TypeError, ValueError):
        return None
