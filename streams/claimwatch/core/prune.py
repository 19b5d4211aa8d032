"""Pruning a fact's claims: past the horizon, superseded, beyond the caps; old ids forgotten.

A part of the partition step (`processor.PartitionProcessor` is a `Pruning`): it runs at
every claim added and every decision, on the state the step holds.
"""

from __future__ import annotations

from dataclasses import replace

from claimwatch.core.claim import Claim
from claimwatch.core.lineage import cap_lineages
from claimwatch.core.policy import CompiledPolicy, FieldRule
from claimwatch.core.size import SizeOf
from claimwatch.core.state import FactState, content_hash
from claimwatch.models.durations import UNTIL_EDITED

#: Most claims kept per fact and most seen ids remembered per fact, whatever the budget.
MAX_CLAIMS_PER_FACT = 64
MAX_SEEN_PER_FACT = 256


class Pruning:
    """Keeps each fact's claims and remembered ids within the policy's bounds."""

    def __init__(self, policy: CompiledPolicy, size_of: SizeOf) -> None:
        self.policy = policy
        #: how many bytes a claim brings to its fact (see core.size)
        self.size_of = size_of
        #: the policy's `max_lineages` (read once: `_prune` runs at every claim)
        self._max_lineages = policy.policy.defaults.max_lineages
        #: the fewest claims at which a fact's caps may drop one (`max_lineages`, or the
        #: most claims a fact keeps)
        self._cap_from = min(self._max_lineages, MAX_CLAIMS_PER_FACT)

    def _prune(self, state: FactState, rule: FieldRule, now: int, added: bool = False) -> None:
        """Drop the claims past the horizon, superseded or beyond the caps; forget old ids.

        A state pruned at this clock time already has nothing to drop, unless the claim just
        `added` (the last) can push one out: the horizon has not moved, and an added claim
        past it is kept until its fact's next decision (see `PartitionProcessor._add`). At
        settle 0 a claim's fact is pruned as it is added and again as it is decided; in a
        replay whose clock stands still, at every claim of the fact.
        """
        if state.pruned_at == now and not (added and self._may_push_out(state, rule)):
            return
        state.pruned_at = now
        self._drop(state, rule, now)

    def _may_push_out(self, state: FactState, rule: FieldRule) -> bool:
        """Whether the last claim added can drop one.

        It can past a cap; on a field kept until edited, beside another live claim of its
        source (the older of the two goes).
        """
        claims = state.claims
        if len(claims) > self._cap_from:
            return True
        if rule.freshness_us < UNTIL_EDITED:
            return False
        source = claims[-1].source
        return any(claim.source == source for claim in claims[:-1])

    def _drop(self, state: FactState, rule: FieldRule, now: int) -> None:
        """The pruning itself (see `_prune`).

        Claims already out of the running (`superseded`) go once a decision listed them;
        of the others, those past the horizon, superseded by their source on a field kept
        until edited, or beyond the caps go too — unless no decision has listed them yet
        (`state.unlisted`): such a claim stays, marked `superseded` with the reason, for
        the next decision to list it `stale`.
        """
        unlisted = state.unlisted
        voting = [c for c in state.claims if c.superseded is None]
        kept = _within_bounds(voting, rule, now, self.policy, self._max_lineages)
        if len(kept) != len(state.claims):  # as long: nothing to drop or mark, the usual case
            live = {c.claim_id for c in kept}
            claims = []
            for claim in state.claims:
                if claim.claim_id in live:
                    claims.append(claim)
                elif claim.claim_id in unlisted:  # answered first, dropped after
                    reason = claim.superseded or _why_dropped(claim, rule, now)
                    claims.append(replace(claim, superseded=reason))
                else:
                    when = claim.observed_us if claim.observed_us is not None else now
                    state.seen[claim.claim_id] = (content_hash(claim.envelope), when)
                    state.add_bytes(-self.size_of(claim))
            state.claims = claims
        floor = now - rule.horizon_us
        seen = state.seen
        if len(seen) > MAX_SEEN_PER_FACT or any(v[1] < floor for v in seen.values()):
            seen = {k: v for k, v in seen.items() if v[1] >= floor}
            if len(seen) > MAX_SEEN_PER_FACT:
                ordered = sorted(seen.items(), key=lambda kv: (kv[1][1], kv[0]))
                seen = dict(ordered[-MAX_SEEN_PER_FACT:])
            state.seen = seen


def _within_bounds(
    claims: list[Claim], rule: FieldRule, now: int, policy: CompiledPolicy, max_lineages: int
) -> list[Claim]:
    """The claims a fact keeps, a sub-list in their order.

    Within the horizon, the newest of each source on a field kept until edited, within
    `max_lineages` and MAX_CLAIMS_PER_FACT.
    """
    floor = now - rule.horizon_us
    kept = [c for c in claims if (c.observed_us or now) >= floor]
    if rule.freshness_us >= UNTIL_EDITED:
        newest: dict[str, Claim] = {}
        for claim in kept:
            held = newest.get(claim.source)
            if held is None or (claim.observed_us or 0) >= (held.observed_us or 0):
                newest[claim.source] = claim
        kept = [c for c in kept if newest.get(c.source) is c]
    kept = cap_lineages(kept, policy, rule, max_lineages)
    if len(kept) > MAX_CLAIMS_PER_FACT:
        newest_last = sorted(kept, key=lambda c: (c.observed_us or 0, c.claim_id))
        last = {c.claim_id for c in newest_last[-MAX_CLAIMS_PER_FACT:]}
        kept = [c for c in kept if c.claim_id in last]
    return kept


def _why_dropped(claim: Claim, rule: FieldRule, now: int) -> str:
    """Why pruning takes a claim out of the running before any decision listed it."""
    if (claim.observed_us or now) < now - rule.horizon_us:
        return "observed before the horizon (freshness + grace)"
    if rule.freshness_us >= UNTIL_EDITED:
        return "superseded by a newer claim of its source, or beyond the fact's caps"
    return "beyond the fact's caps (max_lineages, claims per fact)"
