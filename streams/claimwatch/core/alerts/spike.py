"""Conflict-spike detector: per field, decisions entering `conflict` in tumbling windows."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Final

from claimwatch.core.alerts.shape import MAX_SAMPLE_IDS, Alert, alert_id, bounded_name, state_for
from claimwatch.core.alerts.stats import poisson_sf
from claimwatch.core.claim import fact_key
from claimwatch.core.plain import Plain
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import ConflictSpikeAlert

KIND: Final = "conflict_spike"
#: Facts remembered as "in conflict" per field; the oldest are forgotten beyond it.
MAX_IN_CONFLICT: Final = 100_000
#: Distinct sources and pairs counted per window; the rest are counted as "other".
MAX_KEYS: Final = 64
#: How many sources and pairs an alert names.
TOP: Final = 5
#: Contradicting sources of one decision whose pairs are counted each by name; the pairs
#: with a source past them are counted together as "other" (a decision has at most 64
#: claims, so at most 64 sources: counting every pair by name would cost 2,016 steps).
PAIR_SOURCES: Final = 16

#: A decision whose fact entered conflict: its id, and a digest of each contradicting
#: source's values.
Entering = tuple[str, dict[str, str]]


@dataclass(slots=True)
class SpikeState(Plain):
    """The detector's state for one field: the open window, the baseline and the episode."""

    field: str
    clock: int | None = None
    window_start: int | None = None
    decisions: int = 0
    entering: int = 0
    sources: dict[str, int] = dc_field(default_factory=dict)
    pairs: dict[str, int] = dc_field(default_factory=dict)
    samples: list[str] = dc_field(default_factory=list)
    in_conflict: dict[str, int] = dc_field(default_factory=dict)
    base_conflicts: float = 0.0
    base_decisions: float = 0.0
    firing: bool = False
    quiet: int = 0


class ConflictSpike:
    """Pure state machine: feed decisions of one field in clock order, get alerts back.

    `step` and `advance` update the given state in place and return it with the alerts.
    """

    def __init__(self, config: ConflictSpikeAlert | None = None) -> None:
        self.config = config if config is not None else ConflictSpikeAlert()
        self.window_us = self.config.window
        windows_per_half_life = self.config.baseline_half_life / self.window_us
        self.decay = 0.5 ** (1.0 / windows_per_half_life) if windows_per_half_life > 0 else 0.0

    def step(
        self, state: SpikeState | None, decision: Mapping[str, Any], now_us: int
    ) -> tuple[SpikeState, list[Alert]]:
        """Count one decision at clock time `now_us` (closing the windows the clock passed).

        Whether its fact enters conflict is judged here from `state.in_conflict`, for a
        stream of decisions alone (replay, tests); the worker knows it where the fact lives
        and feeds `take` instead.
        """
        state = state_for(state, decision, SpikeState)
        fact = fact_key(decision["subject"], state.field)
        entering: Entering | None = None
        if decision.get("outcome") == "conflict":
            if fact not in state.in_conflict:
                entering = entering_of(decision)
            state.in_conflict.pop(fact, None)
            state.in_conflict[fact] = max(state.clock or now_us, now_us)
            while len(state.in_conflict) > MAX_IN_CONFLICT:
                del state.in_conflict[next(iter(state.in_conflict))]
        else:
            state.in_conflict.pop(fact, None)
        return self.take(state, entering, now_us)

    def take(
        self, state: SpikeState, entering: Entering | None, now_us: int
    ) -> tuple[SpikeState, list[Alert]]:
        """Count one decision; `entering` when its fact entered conflict with it."""
        state, alerts = self.advance(state, now_us)
        if state.window_start is None:
            clock = state.clock if state.clock is not None else now_us
            state.window_start = clock - clock % self.window_us
        state.decisions += 1
        if entering is not None:
            self._count(state, entering)
        return state, alerts

    def advance(self, state: SpikeState, now_us: int) -> tuple[SpikeState, list[Alert]]:
        """Move the clock to `now_us`; close every window that ends at or before it."""
        if state.clock is None or now_us > state.clock:
            state.clock = now_us
        clock = state.clock
        alerts: list[Alert] = []
        width = self.window_us
        while state.window_start is not None and state.window_start + width <= clock:
            alert = self._close(state)
            if alert is not None:
                alerts.append(alert)
            start = state.window_start + width
            if not state.firing and start + width <= clock:
                # Nothing is pending: skip the empty windows at once (the baseline decays).
                skipped = (clock - start) // width
                state.base_conflicts *= self.decay**skipped
                state.base_decisions *= self.decay**skipped
                start += skipped * width
            state.window_start = start
        return state, alerts

    # ------------------------------------------------------------------ internals

    def _count(self, state: SpikeState, entering: Entering) -> None:
        decision_id, contradicting = entering
        state.entering += 1
        if len(state.samples) < MAX_SAMPLE_IDS:
            state.samples.append(decision_id)
        names = sorted(contradicting)
        for source in names:
            _bump(state.sources, source)
        named = names[:PAIR_SOURCES]
        counted = 0
        for i, first in enumerate(named):
            for second in named[i + 1 :]:
                if contradicting[first] != contradicting[second]:
                    _bump(state.pairs, json.dumps([first, second]))
                    counted += 1
        rest = _differing_pairs(contradicting.values()) - counted
        if rest > 0:
            state.pairs["other"] = state.pairs.get("other", 0) + rest

    def _close(self, state: SpikeState) -> Alert | None:
        assert state.window_start is not None
        config = self.config
        count, decisions = state.entering, state.decisions
        rate = state.base_conflicts / state.base_decisions if state.base_decisions > 0 else 0.0
        expected = max(rate, config.baseline_floor) * decisions
        p_value = poisson_sf(count, expected)
        hot = count >= config.min_count and p_value < config.alpha
        status: str | None = None
        if hot:
            state.quiet = 0
            if not state.firing:
                state.firing, status = True, "firing"
        elif state.firing:
            state.quiet += 1
            if state.quiet >= config.resolve_after:
                state.firing, state.quiet, status = False, 0, "resolved"
        alert = None
        if status is not None:
            alert = self._alert(state, status, count, decisions, expected, p_value)
        if not hot:  # a spike does not teach the baseline that spikes are normal
            state.base_conflicts = state.base_conflicts * self.decay + count
            state.base_decisions = state.base_decisions * self.decay + decisions
        state.decisions = state.entering = 0
        state.sources, state.pairs, state.samples = {}, {}, []
        return alert

    def _alert(
        self,
        state: SpikeState,
        status: str,
        count: int,
        decisions: int,
        expected: float,
        p_value: float,
    ) -> Alert:
        assert state.window_start is not None
        start = format_rfc3339(state.window_start)
        return {
            "alert_id": alert_id(KIND, state.field, status, start),
            "kind": KIND,
            "status": status,
            "field": state.field,
            "window_start": start,
            "window_end": format_rfc3339(state.window_start + self.window_us),
            "count": count,
            "decisions": decisions,
            "expected": round(expected, 6),
            "p_value": p_value,
            "sources": [{"source": k, "count": n} for k, n in _top(state.sources)],
            "source_pairs": [
                {"sources": [k] if k == "other" else json.loads(k), "count": n}
                for k, n in _top(state.pairs)
            ],
            "sample_decision_ids": list(state.samples),
        }


def entering_of(decision: Mapping[str, Any]) -> Entering:
    """What the detector counts of a decision whose fact entered conflict with it.

    Its id, and per contradicting source a digest of the values it claimed: a pair of
    sources counts when their values differ, which the digests tell without the values.
    """
    values: dict[str, set[str]] = {}
    for claim in decision.get("claims", ()):
        if claim.get("disposition") == "contradicting":
            value = json.dumps([claim.get("status"), claim.get("value")], sort_keys=True)
            values.setdefault(bounded_name(str(claim.get("source"))), set()).add(value)
    digests = {
        source: hashlib.blake2b("\x1f".join(sorted(seen)).encode(), digest_size=8).hexdigest()
        for source, seen in values.items()
    }
    return bounded_name(str(decision.get("decision_id", ""))), digests


def _differing_pairs(digests: Iterable[str]) -> int:
    """How many pairs of sources have differing digests, in one pass (no pair walk)."""
    groups = Counter(digests)
    total = sum(groups.values())
    return total * (total - 1) // 2 - sum(g * (g - 1) // 2 for g in groups.values())


def _bump(counts: dict[str, int], key: str) -> None:
    if key not in counts and len(counts) >= MAX_KEYS:
        key = "other"
    counts[key] = counts.get(key, 0) + 1


def _top(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
