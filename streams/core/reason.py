"""The short reason of a decision, generated from the record itself (never stored prose)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from schemas.durations import format_duration

#: The dispositions a reason counts.
_COUNTED: Final = ("stale", "no_evidence", "outranked")


def reason_for(record: Mapping[str, Any], freshness_us: int, settled_by: str | None) -> str:
    """One line saying why the record has its outcome."""
    claims = record["claims"]
    count = dict.fromkeys(_COUNTED, 0)  # (a Counter costs a decision about 5 µs more)
    for claim in claims:
        disposition = claim["disposition"]
        if disposition in count:
            count[disposition] += 1
    outcome = record["outcome"]
    if outcome == "rejected":
        first = claims[0].get("error", "contract violation")
        return f"all {len(claims)} claim(s) rejected; first: {first}"
    if outcome == "insufficient":
        if count["stale"]:
            return (
                f"all {count['stale']} claim(s) exceeded the freshness budget "
                f"({format_duration(freshness_us)})"
            )
        return f"no evidence: {count['no_evidence']} claim(s) were forbidden, unavailable or errors"
    if outcome == "conflict":
        strongest = [c for c in claims if c["disposition"] == "contradicting"]
        klass = strongest[0]["authority"]
        if record["conflict_kind"] == "existence":
            return f"existence conflict at {klass}: found vs not_found"
        values = len({str(a["canonical"]) for a in record["alternatives"]})
        return f"{values} distinct values at {klass}; no fall-through to weaker classes"
    winner = next(c for c in claims if c["disposition"] == "won")
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
    if count["outranked"]:
        parts.append(f"{count['outranked']} outranked")
    if winner["authority"] == "asserted":
        parts.append("an assertion is not proof of state")
    disputed = sum(1 for c in claims if c["authority"] == "asserted" and c.get("dissent"))
    if disputed:
        parts.append(f"{disputed} user assertion(s) disagree: asserted, not verified")
    return "; ".join(parts)
