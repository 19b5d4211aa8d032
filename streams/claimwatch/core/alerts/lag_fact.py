"""The replica-lag detector's per-fact half: the owner's values, and what each new claim shows.

It runs where the fact lives (the worker's claims partition, beside the fact's state), so
the field's detector only receives each decision's `Observation`s and keeps no per-fact
state of its own. `observe` is deterministic: the same decisions give the same tracks and
observations, live or replayed.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Final

from claimwatch.core.alerts.lag_state import FactTrack, OwnerValue
from claimwatch.core.alerts.shape import bounded_name
from claimwatch.core.claim import Claim
from claimwatch.core.entry import ClaimEntry
from claimwatch.core.normalize import ABSENT, NormalizationError
from claimwatch.core.policy import FieldRule, is_owner
from claimwatch.core.timeutil import TimestampError, parse_rfc3339

#: Owner values remembered per fact (a source's claim is matched against any of them).
MAX_VALUES: Final = 4
#: `Observation` flags: the claim dissented (outranked, disagreeing), or was stale.
DISSENT: Final = 1
STALE: Final = 2
#: `Observation` behind marks: the source serves this fact a value older than the budget
#: allows (BEHIND), or it serves the owner's latest value (CAUGHT_UP).
BEHIND: Final = 1
CAUGHT_UP: Final = -1

Canon = Hashable
#: One new claim of a non-owner source, as the field's detector needs it:
#: [source, observed µs, flags, catch-up [lag, low, high] or None, behind mark (or 0)].
Observation = list[Any]


def observe(
    rule: FieldRule,
    fact: FactTrack | None,
    decision: Mapping[str, Any],
    now: int,
    entries: Sequence[ClaimEntry] | None = None,
) -> tuple[FactTrack, list[Observation] | None]:
    """Take in one decision of a fact: its track after it, and the observations of new claims.

    None (not a list) when the decision brought no claim that earlier ones did not: the
    detector then does not count it among the decisions it judges silence against.
    `entries` are the resolution's entries the decision was made of, in the order of its
    `claims` (`resolve_entries`): their times and normalized values are then taken as
    they are instead of being worked out again from the record; the result is the same.
    """
    fact = fact if fact is not None else FactTrack(touched=now)
    claims: Sequence[Mapping[str, Any]] = decision.get("claims") or ()
    known = set(fact.ids)
    if entries is not None:
        tags = [_tag_of(entry.claim) for entry in entries]
    else:
        tags = [id_tag(c.get("claim_id")) for c in claims]
    new = [i for i, tag in enumerate(tags) if tag not in known]
    fact.ids = tags
    fact.touched = now
    if not new:
        return fact, None
    read = _Claims(rule, claims, entries)
    _owner(rule, fact, decision, new, read)
    observations = []
    for i in new:
        seen = _claim(rule, fact, read, i)
        if seen is not None:
            observations.append(seen)
    return fact, observations


class _Claims:
    """A decision's claims, their times and compared values read from the record or entries."""

    __slots__ = ("_owner_canons", "claims", "entries", "rule")

    def __init__(
        self,
        rule: FieldRule,
        claims: Sequence[Mapping[str, Any]],
        entries: Sequence[ClaimEntry] | None,
    ) -> None:
        self.rule = rule
        self.claims = claims
        self.entries = entries
        self._owner_canons: list[Canon | None] | None = None

    def owner_canons(self, fact: FactTrack) -> list[Canon | None]:
        """The owner's values as compared, made when a claim first needs them.

        Made once per decision: its claims change what the values remember of sources,
        never the values themselves.
        """
        canons = self._owner_canons
        if canons is None:
            rule = self.rule
            canons = self._owner_canons = [_canon(rule, v.status, v.value) for v in fact.values]
        return canons

    def time(self, i: int) -> int | None:
        """The claim's observation time (µs), or None when it has none that parses."""
        if self.entries is not None:
            observed = self.entries[i].claim.observed_us
            if observed is not None:  # the record shows exactly this time
                return observed
        return _time(self.claims[i])

    def canon(self, i: int) -> Canon | None:
        """The claim's value as compared; None when it is rejected, no evidence or invalid."""
        if self.entries is not None:
            entry = self.entries[i]
            return None if entry.disposition == "rejected" else entry.canon
        return _claim_canon(self.rule, self.claims[i])


@functools.lru_cache(maxsize=1 << 16)
def id_tag(name: Any) -> str:
    """A short digest of a claim id or source: all a fact's track keeps of them.

    Eight hex digits: two of one fact's recent ids (or sources) share one about once in
    four billion pairs, and then a claim is not counted as new or a source as caught up
    (a missed lag sample, no more). Cached: a fact's ids come back with every decision.
    """
    return hashlib.blake2b(str(name).encode(), digest_size=4).hexdigest()


def _tag_of(claim: Claim) -> str:
    """`id_tag` of a claim's id, kept in its memo when it has one.

    A live claim's tag is asked for at every decision of its fact.
    """
    memo = claim.memo
    if memo is None:
        return id_tag(claim.claim_id)
    tag = memo.tag
    if tag is None:
        tag = memo.tag = id_tag(claim.claim_id)
    return tag


def _owner(
    rule: FieldRule, fact: FactTrack, decision: Mapping[str, Any], new: list[int], read: _Claims
) -> None:
    """Record the owner's value when it won the decision; a different one is a change."""
    if rule.owner is None or decision.get("outcome") != "resolved":
        return  # (a field without an owner has no owner's values)
    claims = read.claims
    owners = [i for i in new if is_owner(rule, str(claims[i].get("source")))]
    if not owners:
        return  # (most decisions: the winner's value is then not needed)
    winner = next((i for i, c in enumerate(claims) if c.get("disposition") == "won"), None)
    won = read.canon(winner) if winner is not None else None
    if won is None:
        return
    agree = rule.normalizer.agree
    firsts = []
    for i in owners:
        at, canon = read.time(i), read.canon(i)
        if at is not None and canon is not None and agree(canon, won):
            firsts.append((at, str(claims[i].get("claim_id")), claims[i]))
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


def _claim(rule: FieldRule, fact: FactTrack, read: _Claims, i: int) -> Observation | None:
    """What a new claim of a non-owner source shows (None for the owner's, or no time)."""
    claim = read.claims[i]
    source = str(claim.get("source"))
    if is_owner(rule, source):
        return None
    at = read.time(i)
    if at is None:
        return None
    named = bounded_name(source)  # what the field's detector keeps and sends of it
    disposition = claim.get("disposition")
    flags = (DISSENT if disposition == "outranked" and claim.get("dissent") else 0) | (
        STALE if disposition == "stale" else 0
    )
    if not fact.values:  # no owner's value to compare with (its canon is not needed)
        return [named, at, flags, None, 0]
    canon = read.canon(i)
    if canon is None:
        return [named, at, flags, None, 0]
    agree = rule.normalizer.agree
    canons = read.owner_canons(fact)
    match = -1
    for i in range(len(canons) - 1, -1, -1):
        known = canons[i]
        if known is not None and agree(canon, known):
            match = i
            break
    catch: list[int] | None = None
    mark = 0
    who = id_tag(source)  # what the owner's values remember of the sources
    for i, value in enumerate(fact.values):
        if who in value.caught:
            continue
        if i <= match:
            value.caught.append(who)
            behind = value.behind.pop(who, 0)
            if i == match and value.change:
                high = at - fact.values[i - 1].last if i > 0 else -1
                catch = [max(0, at - value.since), behind, high]
        elif value.change and at > value.since:
            gap = at - value.since
            if gap > value.behind.get(who, 0):
                value.behind[who] = gap
            if gap > rule.freshness_us:
                mark = BEHIND
    if match == len(fact.values) - 1:
        mark = CAUGHT_UP
    return [named, at, flags, catch, mark]


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
