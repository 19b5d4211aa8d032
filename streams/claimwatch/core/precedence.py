"""Precedence: the strongest class decides, never falling through to a weaker one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from claimwatch.core.entry import ClaimEntry, by_recency
from claimwatch.core.limits import clip
from claimwatch.core.normalize import ABSENT
from claimwatch.core.policy import FieldRule, is_owner
from claimwatch.models.policy import FieldType, OnConflict

#: The dispositions of the claims a resolution rests on.
CARRYING: Final = frozenset({"won", "corroborating"})
#: The event (and metrics label) of a decision held back from `proceed` for that reason.
UNREGISTERED_ONLY: Final = "unregistered_only"
#: Source names a reason lists at most.
_NAMES_SHOWN: Final = 3


@dataclass(slots=True)
class Precedence:
    """The verdict among lineage representatives.

    Never changed once made; not frozen, which would make it take twice as long to build.
    """

    outcome: str
    winner: ClaimEntry | None
    strongest: list[ClaimEntry]
    conflict_kind: str | None = None
    settled_by: OnConflict | None = None
    complementary: bool = False  # text: several non-conflicting passages, all listed

    @property
    def show_alternatives(self) -> bool:
        return (
            self.outcome == "conflict"
            or self.settled_by == OnConflict.PRESENT_WITH_TIMESTAMP
            or self.complementary
        )


def decide(representatives: list[ClaimEntry], rule: FieldRule) -> Precedence:
    """Pick the outcome and mark every representative's disposition."""
    top = max(e.rank for e in representatives)
    strongest = by_recency([e for e in representatives if e.rank == top])
    normalizer = rule.normalizer
    if normalizer.all_agree([e.canon for e in strongest]):
        several = normalizer.field_type is FieldType.TEXT and len(strongest) > 1
        verdict = Precedence("resolved", strongest[0], strongest, complementary=several)
    else:
        verdict = _disagreement(strongest, rule)
    _mark(representatives, verdict, rule)
    return verdict


def _disagreement(strongest: list[ClaimEntry], rule: FieldRule) -> Precedence:
    absent = [e.canon is ABSENT for e in strongest]
    if any(absent) and not all(absent):
        return Precedence("conflict", None, strongest, conflict_kind="existence")
    policy = rule.on_conflict
    if policy in (OnConflict.PREFER_RECENT, OnConflict.PRESENT_WITH_TIMESTAMP):
        return Precedence("resolved", strongest[0], strongest, settled_by=policy)
    if policy == OnConflict.PREFER_PRIMARY:
        owned = [e for e in strongest if is_owner(rule, e.claim.source)]
        if owned:
            return Precedence("resolved", owned[0], strongest, settled_by=policy)
    return Precedence("conflict", None, strongest, conflict_kind="value")


def _mark(representatives: list[ClaimEntry], verdict: Precedence, rule: FieldRule) -> None:
    winner = verdict.winner
    if winner is None:
        top = verdict.strongest[0].rank
        for entry in representatives:
            entry.disposition = "contradicting" if entry.rank == top else "outranked"
        return
    agree = rule.normalizer.agree
    for entry in representatives:
        if entry is winner:
            entry.disposition = "won"
        elif agree(entry.canon, winner.canon):
            entry.disposition = "corroborating"
        else:
            entry.disposition = "outranked"
            entry.dissent = True


def unregistered_carriers(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sources of the claims a resolution rests on, when none of them is registered.

    The carrying claims are the winner and the claims of its class that corroborate it
    (agreement from a weaker class does not carry a value). [] when any of them is
    registered or nothing won; else their sources, sorted. A value only unregistered
    sources vouch for is unverified: its decision is never `proceed`
    (docs/concepts.md#authority-classes),
    whatever class the unregistered sources default to.
    """
    top = next((c["authority"] for c in claims if c["disposition"] == "won"), None)
    names: set[str] = set()
    for claim in claims:
        if claim["disposition"] in CARRYING and claim["authority"] == top:
            if not claim.get("unregistered"):
                return []
            names.add(str(claim["source"]))
    return sorted(names)


def unregistered_note(carriers: list[str]) -> str:
    """The reason's clause for a resolution carried by unregistered sources only."""
    shown = ", ".join(clip(name) for name in carriers[:_NAMES_SHOWN])
    more = len(carriers) - _NAMES_SHOWN
    return f"carried by unregistered sources only: {shown}" + (
        f" and {more} more" if more > 0 else ""
    )


def unregistered_only(record: Mapping[str, Any]) -> bool:
    """Whether a decision record is a resolution its unregistered sources alone carry."""
    if record["outcome"] != "resolved" or record["action"] == "proceed":
        return False
    return bool(unregistered_carriers(record["claims"]))
