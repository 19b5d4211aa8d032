"""One claim under consideration: what the policy says of its source and what became of it."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from claimwatch.core.claim import Claim
from claimwatch.models.policy import Authority


@dataclass(slots=True)
class ClaimEntry:
    """A claim with its class, lineage, normalized value and (once decided) disposition."""

    claim: Claim
    authority: Authority
    rank: int
    lineage: str
    registered: bool
    canon: Hashable = None
    disposition: str | None = None
    error: str | None = None
    dissent: bool = False
    temporal: bool = False

    @property
    def observed_us(self) -> int:
        return self.claim.observed_us if self.claim.observed_us is not None else -1

    @property
    def claim_id(self) -> str:
        return self.claim.claim_id


def by_strength(entries: list[ClaimEntry]) -> list[ClaimEntry]:
    """Strongest first: highest class, then newest, ties by the smaller claim_id."""
    ordered = sorted(entries, key=lambda e: e.claim_id)
    ordered.sort(key=lambda e: (e.rank, e.observed_us), reverse=True)
    return ordered


def by_recency(entries: list[ClaimEntry]) -> list[ClaimEntry]:
    """Newest first, ties by the smaller claim_id."""
    ordered = sorted(entries, key=lambda e: e.claim_id)
    ordered.sort(key=lambda e: e.observed_us, reverse=True)
    return ordered
