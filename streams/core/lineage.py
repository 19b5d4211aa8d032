"""Lineage collapse: claims that share an upstream are one vote, led by their strongest claim."""

from __future__ import annotations

from streams.core.entry import Entry, by_strength
from streams.core.grouping import merge_near_duplicates
from streams.core.normalize import Normalizer


def collapse(fresh: list[Entry], normalizer: Normalizer) -> list[Entry]:
    """Return one representative per lineage; mark the others `same_lineage` or `outranked`.

    The representative is the highest class, then the newest (ties by claim_id), so a newer
    claim from a cache never displaces its own owner's claim.
    """
    if normalizer.groups_duplicates:
        merge_near_duplicates(fresh, normalizer.duplicate)  # near-duplicates are one lineage
    groups: dict[str, list[Entry]] = {}
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
