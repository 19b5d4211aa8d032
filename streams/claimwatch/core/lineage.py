"""Lineages: claims that share an upstream are one vote, and a fact keeps so many of them."""

from __future__ import annotations

from claimwatch.core.claim import Claim
from claimwatch.core.entry import ClaimEntry, by_strength
from claimwatch.core.grouping import merge_near_duplicates
from claimwatch.core.normalize import Normalizer
from claimwatch.core.policy import CompiledPolicy, FieldRule


def collapse(fresh: list[ClaimEntry], normalizer: Normalizer) -> list[ClaimEntry]:
    """Return one representative per lineage; mark the others `same_lineage` or `outranked`.

    The representative is the highest class, then the newest (ties by claim_id), so a newer
    claim from a cache never displaces its own owner's claim.
    """
    if normalizer.groups_duplicates:
        merge_near_duplicates(fresh, normalizer.duplicate)  # near-duplicates are one lineage
    groups: dict[str, list[ClaimEntry]] = {}
    for entry in fresh:
        groups.setdefault(entry.lineage, []).append(entry)
    representatives = []
    for members in groups.values():
        ordered = by_strength(members) if len(members) > 1 else members
        lead = ordered[0]
        representatives.append(lead)
        for other in ordered[1:]:
            if normalizer.agree(other.canon, lead.canon):
                other.disposition = "same_lineage"
            else:
                other.disposition = "outranked"
                other.dissent = True
    return representatives


def cap_lineages(
    claims: list[Claim], policy: CompiledPolicy, rule: FieldRule, limit: int
) -> list[Claim]:
    """The claims of the `limit` (`max_lineages`) lineages claimed most recently (ties by name)."""
    if len(claims) <= limit:
        return claims  # no more lineages than claims: nothing to cap (the common case)
    newest: dict[str, int] = {}
    lineages = [_lineage(c, policy, rule) for c in claims]
    for claim, lineage in zip(claims, lineages, strict=True):
        newest[lineage] = max(newest.get(lineage, -1), claim.observed_us or 0)
    if len(newest) <= limit:
        return claims
    keep = set(sorted(newest, key=lambda name: (newest[name], name))[-limit:])
    return [c for c, lineage in zip(claims, lineages, strict=True) if lineage in keep]


def _lineage(claim: Claim, policy: CompiledPolicy, rule: FieldRule) -> str:
    """The claim's own lineage when it names one (a string), else its source's."""
    return claim.lineage_label or policy.source_view(rule.name, claim.source).lineage
