"""Plain-language rendering of a decision record, from the record alone (never stored)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

_FATE = {
    "won": "won",
    "corroborating": "agreed with the winner (an independent lineage)",
    "contradicting": "contradicted the other strongest claims",
    "same_lineage": "shares its upstream ({lineage}) with a stronger claim: one vote, not two",
    "stale": "was too old: observed beyond the field's freshness budget",
    "no_evidence": "is no evidence: the tool reported `{status}`",
    "rejected": "was rejected: {error}",
}


def _value(claim: Mapping[str, Any]) -> str:
    if claim.get("status") == "not_found":
        return "not found"
    if "value" not in claim:
        return "no value"
    return orjson.dumps(claim["value"]).decode()


def _fate(claim: Mapping[str, Any], winner: Mapping[str, Any] | None) -> str:
    disposition = claim["disposition"]
    if disposition == "outranked":
        if not claim.get("dissent"):
            return "was outranked by a stronger class (no fall-through to weaker sources)"
        if winner is None:  # nothing was decided: only its own lineage can have outranked it
            return (
                f"was outranked within its lineage ({claim.get('lineage')}): it disagrees "
                "with a stronger claim from the same upstream"
            )
        against = f" than {winner['source']}" if winner else ""
        when = f"; it is older{against} (a lagging copy?)" if claim.get("temporal") else ""
        return f"was outranked and dissents from the decided value{when}"
    template = str(_FATE.get(disposition, disposition))
    return template.format(
        lineage=claim.get("lineage"), status=claim.get("status"), error=claim.get("error")
    )


def _unverified(record: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """Why an asserted claim (a user's word) is marked "asserted, not verified", else None.

    It is marked when it decided the value alone, when the decided value disagrees with it,
    and when the stronger sources are in conflict; an assertion that agrees with a stronger
    decided value, or that did not count (stale, rejected, no evidence), is not.
    """
    if claim.get("authority") != "asserted":
        return None
    winner = next((c for c in record["claims"] if c["disposition"] == "won"), None)
    if claim["disposition"] == "won":
        return "asserted, not verified: no stronger source confirms it"
    if claim["disposition"] != "outranked":
        return None
    if record["outcome"] == "resolved" and winner is not None and claim.get("dissent"):
        return (
            f"asserted, not verified: {winner['source']} ({winner['authority']}) "
            f"still shows {_value(winner)}"
        )
    if record["outcome"] == "conflict":
        return "asserted, not verified: the stronger sources disagree among themselves"
    return None


def explain(record: Mapping[str, Any]) -> str:
    """A few lines a support engineer or an auditor can read."""
    claims = record["claims"]
    winner = next((c for c in claims if c["disposition"] == "won"), None)
    fact = f"{record['subject']} {record['field']}"
    lines = [f"Decision {record['decision_id']} on {fact} at {record['decided_at']}"]
    lines.append(f"under policy {record['policy_version']}: {record['outcome'].upper()}.")
    if record["outcome"] == "resolved":
        shown = (
            "absent (not found)"
            if record.get("exists") is False
            else orjson.dumps(record["value"]).decode()
        )
        assert winner is not None
        lines.append(
            f"The value is {shown}, from {winner['source']} ({winner['authority']}), "
            f"with {record['corroboration']} independent lineage(s) agreeing."
        )
        for claim in claims:
            if claim["disposition"] == "outranked" and _unverified(record, claim):
                lines.append(
                    f"Asserted, not verified: {claim['source']} said {_value(claim)}, but "
                    f"{winner['source']} ({winner['authority']}) still shows {shown}."
                )
    elif record["outcome"] == "conflict":
        kind = record.get("conflict_kind")
        lines.append(f"The strongest sources disagree ({kind} conflict); no value is decided:")
        for alt in record.get("alternatives", []):
            value = orjson.dumps(alt["value"]).decode() if alt["exists"] else "not found"
            lines.append(f"  - {alt['source']} said {value} at {alt['observed_at']}")
    lines.append(f"Why: {record['reason']}.")
    lines.append("Claims considered:")
    for claim in claims:
        unverified = _unverified(record, claim)
        lines.append(
            f"  - {claim['source']} ({claim['authority']}) said {_value(claim)} at "
            f"{claim.get('observed_at') or 'an unknown time'}: {_fate(claim, winner)}"
            f"{f' ({unverified})' if unverified else ''}."
        )
    action = {
        "proceed": "proceed: the agent may act on this value",
        "degrade": "degrade: answer without relying on this fact",
        "escalate": "escalate: a person must decide before anything irreversible happens",
    }[record["action"]]
    lines.append(f"Action: {action}.")
    return "\n".join(lines)
