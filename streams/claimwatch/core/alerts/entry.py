"""What the detectors need of one decision, made where its fact lives.

A decision record carries every claim with its value; the detectors need far less: the
time, the fact, whether the fact entered conflict (its id and the contradicting sources'
value digests), and what each new claim of a non-owner source showed about its lag. The
fact's partition works that out beside the fact's state (`FactTrack`), and the worker
sends the entries of a field in batches, so the field's detector keeps no per-fact state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from claimwatch.core.alerts.lag_fact import Observation, observe
from claimwatch.core.alerts.lag_state import FactTrack
from claimwatch.core.alerts.shape import MAX_NAME_CHARS, bounded_name
from claimwatch.core.alerts.spike import Entering, entering_of
from claimwatch.core.claim import fact_key
from claimwatch.core.entry import ClaimEntry
from claimwatch.core.policy import CompiledPolicy

#: [clock µs, fact key, Entering or None, the new claims' observations or None]
DetectorEntry = tuple[int, str, Entering | None, list[Observation] | None]


def entry_of(
    policy: CompiledPolicy,
    track: FactTrack | None,
    decision: Mapping[str, Any],
    previous_outcome: str | None,
    now_us: int,
    resolved: Sequence[ClaimEntry] | None = None,
) -> tuple[FactTrack, DetectorEntry]:
    """One decision of a fact, decided at `now_us`: the fact's track after it, and its entry.

    `previous_outcome` is the outcome of the fact's decision before this one (None for the
    first): the fact enters conflict when this one is a conflict and that was not.
    `resolved`: the resolution's entries of the decision's claims, in their order (see
    `lag_fact.observe`), when the caller has them.
    """
    name = str(decision["field"])
    key = bounded_name(fact_key(decision["subject"], name))
    track, observations = observe(policy.rule(name), track, decision, now_us, resolved)
    entering = None
    if decision.get("outcome") == "conflict" and previous_outcome != "conflict":
        entering = entering_of(decision)
    return track, (now_us, key, entering, observations)


#: Bounds of one alerts-input record, which anyone who can write the topic can send: the
#: worker sends at most 500 entries a record and a decision has at most 64 claims.
MAX_ENTRIES: Final = 1000
MAX_SOURCES_PER_ENTRY: Final = 64
_US_MAX: Final = 2**63 - 1


class EntryError(ValueError):
    """An alerts-input entry that does not validate (the message says what)."""


def _int(value: Any, what: str) -> int:
    if type(value) is not int or not -_US_MAX <= value <= _US_MAX:
        raise EntryError(f"{what} must be a whole number within 64 bits")
    return value


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS:
        raise EntryError(f"{what} must be a string of 1 to {MAX_NAME_CHARS} characters")
    return value


def field_name(value: Any) -> str:
    """The field an alerts-input record names, a longer name clipped (`bounded_name`).

    The worker names a decision's field as its claims do, and a claim's field is bounded
    only by the claim's size: a long one is clipped here rather than refused, so that the
    entries of a valid claim are never dead-lettered.
    """
    if not isinstance(value, str) or not value:
        raise EntryError("`field` must be a non-empty string")
    return bounded_name(value)


def _observation(obj: Any) -> Observation:
    if not isinstance(obj, list) or len(obj) != 5:
        raise EntryError("an observation must be [source, at, flags, catch-up, mark]")
    source, at, flags, catch, mark = obj
    if catch is not None:
        if not isinstance(catch, list) or len(catch) != 3:
            raise EntryError("a catch-up must be [lag, low, high] or null")
        catch = [_int(v, "a catch-up figure") for v in catch]
    return [
        _name(source, "a source"),
        _int(at, "`at`"),
        _int(flags, "flags"),
        catch,
        _int(mark, "a mark"),
    ]


def entry_from_obj(obj: Any) -> DetectorEntry:
    """An entry read back from JSON, validated (EntryError says why it is not one)."""
    if not isinstance(obj, list) or len(obj) != 4:
        raise EntryError("an entry must be [clock, fact, entering, observations]")
    now_us, key, entering, observations = obj
    if entering is not None:
        if (
            not isinstance(entering, list)
            or len(entering) != 2
            or not isinstance(entering[1], dict)
        ):
            raise EntryError("`entering` must be [decision id, {source: digest}] or null")
        digests = entering[1]
        if len(digests) > MAX_SOURCES_PER_ENTRY:
            raise EntryError(f"{len(digests)} contradicting sources, over {MAX_SOURCES_PER_ENTRY}")
        entering = (
            _name(entering[0], "a decision id"),
            {_name(k, "a source"): _name(v, "a digest") for k, v in digests.items()},
        )
    if observations is not None:
        if not isinstance(observations, list) or len(observations) > MAX_SOURCES_PER_ENTRY:
            raise EntryError(f"observations must be a list of at most {MAX_SOURCES_PER_ENTRY}")
        observations = [_observation(o) for o in observations]
    return (_int(now_us, "the clock"), _name(key, "the fact"), entering, observations)


def entries_from_obj(obj: Any) -> tuple[str, list[DetectorEntry]]:
    """An alerts-input record of entries (`{"field", "entries"}`), validated (EntryError)."""
    if not isinstance(obj, dict):
        raise EntryError("not a JSON object")
    name = field_name(obj.get("field"))
    entries = obj.get("entries")
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise EntryError(f"`entries` must be a list of at most {MAX_ENTRIES}")
    return name, [entry_from_obj(e) for e in entries]
