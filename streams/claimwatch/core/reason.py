"""The short reason of a decision, generated from the record itself (never stored prose)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimwatch.core.precedence import unregistered_carriers, unregistered_note
from claimwatch.models.durations import format_duration


def reason_for(record: Mapping[str, Any], freshness_us: int, settled_by: str | None) -> str:
    """One line saying why the record has its outcome."""
    claims = record["claims"]
    stale = no_evidence = outranked = disputed = 0
    winner = strongest = None
    for claim in claims:  # one pass: this runs at every decision, over every live claim
        disposition = claim["disposition"]
        if disposition == "won":
            if winner is None:
                winner = claim
        elif disposition == "outranked":
            outranked += 1
            if claim.get("dissent") and claim["authority"] == "asserted":
                disputed += 1
        elif disposition == "stale":
            stale += 1
        elif disposition == "no_evidence":
            no_evidence += 1
        elif disposition == "contradicting" and strongest is None:
            strongest = claim
    outcome = record["outcome"]
    if outcome == "rejected":
        first = claims[0].get("error", "contract violation")
        return f"all {len(claims)} claim(s) rejected; first: {first}"
    if outcome == "insufficient":
        if stale:
            return (
                f"all {stale} claim(s) exceeded the freshness budget "
                f"({format_duration(freshness_us)})"
            )
        return f"no evidence: {no_evidence} claim(s) were forbidden, unavailable or errors"
    if outcome == "conflict":
        assert strongest is not None, "a conflict has contradicting claims"
        klass = strongest["authority"]
        if record["conflict_kind"] == "existence":
            return f"existence conflict at {klass}: found vs not_found"
        values = len({str(a["canonical"]) for a in record["alternatives"]})
        return f"{values} distinct values at {klass}; no fall-through to weaker classes"
    assert winner is not None, "a resolution has a winning claim"
    what = "absence" if record["exists"] is False else "value"
    parts = [f"{what} from {winner['source']} ({winner['authority']})"]
    parts.append(f"{record['corroboration']} lineage(s) agree")
    if settled_by == "prefer_recent":
        parts.append("newest of the disagreeing strongest claims wins (prefer_recent)")
    elif settled_by == "prefer_primary":
        parts.append("the field's owner wins over the other strongest claims (prefer_primary)")
    elif settled_by == "present_with_timestamp":
        parts.append("newest shown with every competing value (present_with_timestamp)")
    elif record["alternatives"]:
        parts.append(f"newest of {len(record['alternatives'])} complementary passages, all listed")
    if outranked:
        parts.append(f"{outranked} outranked")
    if winner["authority"] == "asserted":
        parts.append("an assertion is not proof of state")
    if disputed:
        parts.append(f"{disputed} user assertion(s) disagree: asserted, not verified")
    carriers = unregistered_carriers(claims) if record["action"] != "proceed" else []
    if carriers:
        parts.append(unregistered_note(carriers))
    return "; ".join(parts)
