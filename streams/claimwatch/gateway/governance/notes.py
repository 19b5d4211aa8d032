"""The governance note of a phase, its sentence, and the results that carry them.

A note is taken from the decision record and the checks' outcomes: the decision and what
it did to the call (`applied`), the arguments with their labels, the attack graph, how
each check ended, what was masked, and what became of the record (`recorded`). It goes
under `structuredContent.claimwatch.governance.<phase>`, and its sentence as one text
block. A refused call is an error result carrying the notes of the phases that ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from claimwatch.gateway.annotate import NOTE_KEY
from claimwatch.gateway.governance.checks import Outcome, Phase
from claimwatch.gateway.governance.decide import Applied
from claimwatch.gateway.governance.record import Recorded
from claimwatch.gateway.governance.targets import Span

#: The key of the `claimwatch` note under which governance notes go, by phase.
GOVERNANCE_KEY = "governance"


def phase_note(
    record: Mapping[str, Any],
    outcomes: Sequence[Outcome],
    *,
    phase: Phase,
    applied: Applied,
    masked: Sequence[tuple[Span, str]] = (),
    recorded: Recorded,
    why: str | None = None,
) -> dict[str, Any]:
    """The note of one decided phase; `masked` pairs each replaced span with its check."""
    note: dict[str, Any] = {
        "phase": phase,
        "request_id": record["request_id"],
        "request_type": record["request_type"],
        "decision": record["decision"],
        "action": record["action"],
        "applied": applied,
        "reason": record["reason"],
        "decision_id": record["decision_id"],
        "policy_version": record["policy_version"],
        "accepted": list(record["accepted"]),
        "tie": record["tie"],
        "timed_out": record["timed_out"],
        "missing_checks": list(record["missing_checks"]),
        "extensions": [list(e) for e in record["extensions"]],
        "arguments": [
            {k: a[k] for k in ("id", "kind", "decision", "strength", "claim", "label", "accepted")}
            for a in record["arguments"]
        ],
        "attacks": [dict(a) for a in record["attacks"]],
        "checks": [_check(o) for o in outcomes],
        "masked": [
            {"pointer": s.pointer, "start": s.start, "end": s.end, "label": s.label, "by": by}
            for s, by in masked
        ],
        "recorded": recorded,
    }
    if why is not None:
        note["why"] = why
    return note


def _check(outcome: Outcome) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": outcome.name,
        "status": "ok" if outcome.argument is not None else "failed",
        "ms": round(outcome.elapsed_ms, 1),
    }
    if outcome.error is not None:
        entry["error"] = outcome.error
    return entry


def sentence(tool: str, note: Mapping[str, Any]) -> str:
    """The note in one sentence for the agent (and the person reading its transcript)."""
    where = f"{tool} ({note['phase']})"
    verdict = f"verdict {note['decision_id']}"
    applied = note["applied"]
    if applied == "denied":
        return f"claimwatch governance denied {where}: {_why_denied(note)}; {verdict}"
    if applied == "escalated_denied":
        return (
            f"claimwatch governance escalated {where}: {_why_undecided(note)}; "
            f"denied — ask a person; {verdict}"
        )
    if applied == "escalated_passed":
        return (
            f"claimwatch governance escalated {where}: {_why_undecided(note)}; passed unchanged "
            f"(on_undecided: annotate) — treat it as unchecked; {verdict}"
        )
    accepted = ", ".join(
        f"{a['id']} ({a['decision']}) accepted" for a in note["arguments"] if a["accepted"]
    )
    if applied == "masked":
        return f"claimwatch governance {where}: masked {_items(note)}: {accepted}; {verdict}"
    return f"claimwatch governance {where}: passed: {accepted}; {verdict}"


def _items(note: Mapping[str, Any]) -> str:
    labels: dict[str, int] = {}
    for span in note["masked"]:
        labels[span["label"]] = labels.get(span["label"], 0) + 1
    count = len(note["masked"])
    kinds = ", ".join(f"{label} ×{n}" for label, n in labels.items())
    return f"{count} item{'s' if count != 1 else ''}" + (f" ({kinds})" if kinds else "")


def _why_denied(note: Mapping[str, Any]) -> str:
    if "why" in note:
        return str(note["why"])
    denying = [a for a in note["arguments"] if a["accepted"] and a["decision"] == "deny"]
    said = "; ".join(f"{a['id']} says deny ({a['kind']}: {a['claim']})" for a in denying)
    return f"{said} and no accepted argument defeats it" if said else str(note["reason"])


def _why_undecided(note: Mapping[str, Any]) -> str:
    if note["missing_checks"]:
        failed = {c["name"]: c.get("error") for c in note["checks"]}
        told = "; ".join(
            f"{name}: {failed[name]}" if failed.get(name) else name
            for name in note["missing_checks"]
        )
        return f"check(s) without an argument ({told}), so nothing may pass unchecked"
    if note["extensions"] == [[]]:
        return "no argument survives its attackers (grounded extension empty)"
    return str(note["reason"])


def refused(tool: str, notes: Mapping[Phase, Mapping[str, Any]], phase: Phase) -> CallToolResult:
    """The error result of a call refused in `phase`, carrying every phase's note."""
    return CallToolResult(
        content=[TextContent(type="text", text=sentence(tool, notes[phase]))],
        structured_content={NOTE_KEY: {GOVERNANCE_KEY: {p: dict(n) for p, n in notes.items()}}},
        is_error=True,
    )


def with_notes(
    result: CallToolResult, tool: str, notes: Mapping[Phase, Mapping[str, Any]]
) -> CallToolResult:
    """A copy of a passed (or masked) result with the phases' notes and sentences added."""
    if not notes:
        return result
    structured = dict(result.structured_content or {})
    prior = structured.get(NOTE_KEY)
    claimwatch = dict(prior) if isinstance(prior, Mapping) else {}
    claimwatch[GOVERNANCE_KEY] = {p: dict(n) for p, n in notes.items()}
    structured[NOTE_KEY] = claimwatch
    texts = [TextContent(type="text", text=sentence(tool, n)) for n in notes.values()]
    return result.model_copy(
        update={"content": [*result.content, *texts], "structured_content": structured}
    )
