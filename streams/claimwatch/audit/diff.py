"""Compare replayed decisions with recorded ones, fact by fact (the last decision of each)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from claimwatch.audit.replay import facts_last

#: What makes two decisions of a fact differ for an auditor.
COMPARED = ("outcome", "canonical", "action")
#: The keys a decision must have (as strings) to be compared at all.
NEEDS = ("subject", "field", "decision_id")


def _brief(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"decision_id": record["decision_id"], **{k: record.get(k) for k in COMPARED}}


def compared_part(record: dict[str, Any]) -> dict[str, Any]:
    """What `diff` reads of a decision: its fact, id and compared fields (not its claims)."""
    return {
        "subject": record["subject"],
        "field": record["field"],
        "decision_id": record["decision_id"],
        **{k: record.get(k) for k in COMPARED},
    }


@dataclass(slots=True)
class FieldSummary:
    """Per-field counts of a diff."""

    compared: int = 0
    changed: int = 0
    transitions: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class Diff:
    """Every fact whose outcome, canonical value or action changed, and a per-field summary."""

    changes: list[dict[str, Any]] = field(default_factory=list)
    fields: dict[str, FieldSummary] = field(default_factory=dict)


def diff(recorded: Iterable[dict[str, Any]], replayed: Iterable[dict[str, Any]]) -> Diff:
    """Changes between the recorded and the replayed last decision of every fact."""
    old = dict(facts_last(recorded))
    new = dict(facts_last(replayed))
    result = Diff()
    for fact in sorted(old.keys() | new.keys()):
        before, after = old.get(fact), new.get(fact)
        field_name = (before or after or {}).get("field", "")
        summary = result.fields.setdefault(field_name, FieldSummary())
        summary.compared += 1
        if before is not None and after is not None:
            changed = [k for k in COMPARED if before.get(k) != after.get(k)]
        else:
            changed = ["missing" if after is None else "new"]
        if not changed:
            continue
        summary.changed += 1
        was = before["outcome"] if before else "-"
        now = after["outcome"] if after else "-"
        summary.transitions[f"{was} -> {now}"] += 1
        subject = (before or after or {}).get("subject")
        result.changes.append(
            {
                "fact": fact,
                "subject": subject,
                "field": field_name,
                "changed": changed,
                "old": _brief(before),
                "new": _brief(after),
            }
        )
    return result
