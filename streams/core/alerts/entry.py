"""What the detectors need of one decision, made where its fact lives.

A decision record carries every claim with its value; the detectors need far less: the
time, the fact, whether the fact entered conflict (its id and the contradicting sources'
value digests), and what each new claim of a non-owner source showed about its lag. The
fact's partition works that out beside the fact's state (`FactTrack`), and the worker
sends the entries of a field in batches, so the field's detector keeps no per-fact state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streams.core.alerts.lag_fact import Observation, observe
from streams.core.alerts.lag_state import FactTrack
from streams.core.alerts.spike import Entering, entering_of
from streams.core.claim import fact_key
from streams.core.entry import Entry as Resolved
from streams.core.policy import CompiledPolicy

#: [clock µs, fact key, Entering or None, the new claims' observations or None]
Entry = tuple[int, str, Entering | None, list[Observation] | None]


def entry_of(
    policy: CompiledPolicy,
    track: FactTrack | None,
    decision: Mapping[str, Any],
    previous_outcome: str | None,
    now_us: int,
    resolved: Sequence[Resolved] | None = None,
) -> tuple[FactTrack, Entry]:
    """One decision of a fact, decided at `now_us`: the fact's track after it, and its entry.

    `previous_outcome` is the outcome of the fact's decision before this one (None for the
    first): the fact enters conflict when this one is a conflict and that was not.
    `resolved`: the resolution's entries of the decision's claims, in their order (see
    `lag_fact.observe`), when the caller has them.
    """
    name = str(decision["field"])
    key = fact_key(decision["subject"], name)
    track, observations = observe(policy.rule(name), track, decision, now_us, resolved)
    entering = None
    if decision.get("outcome") == "conflict" and previous_outcome != "conflict":
        entering = entering_of(decision)
    return track, (now_us, key, entering, observations)


def entry_from_obj(obj: Any) -> Entry:
    """An entry read back from JSON (lists where the tuple had tuples)."""
    now_us, key, entering, observations = obj
    return (
        int(now_us),
        str(key),
        (str(entering[0]), dict(entering[1])) if entering is not None else None,
        observations,
    )
