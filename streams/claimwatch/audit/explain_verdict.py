"""Plain-language rendering of a verdict record (`verdicts.decisions`), from the record alone.

A verdict is the decision on one request (a gateway call's phase, say) from the arguments
its checks sent: which arguments the attack rules left standing, who attacked whom, and
why the outcome follows. `explain_verdict` reads only the record, as `audit.explain` does
for a fact's decision, so a record from a file, a topic or a replay reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

#: What an argument's label in the chosen extension means.
_STANDING: Final = {
    "in": "accepted",
    "out": "defeated",
    "undec": "undecided (neither accepted nor defeated)",
}
#: An attack type as a verb.
_VERB: Final = {"undercut": "undercuts", "rebut": "rebuts", "undermine": "undermines"}
#: What each action asks of whoever applies the decision.
_ACTION: Final = {
    "proceed": "proceed",
    "modify": "proceed with the masking the accepted arguments name",
    "block": "block the call",
    "escalate": "escalate: a person decides; nothing proceeds meanwhile",
}


def explain_verdict(record: Mapping[str, Any]) -> str:
    """The verdict in words: the outcome, each argument, the attacks, the reason, the gaps.

    KeyError/TypeError when the record lacks a field every verdict record has.
    """
    request_type = record.get("request_type") or "no request type"
    lines = [
        f"verdict {record['decision_id']} on {record['request_id']} ({request_type}, policy "
        f"{record['policy_version']}): {record['decision']} — "
        f"{_ACTION.get(str(record['action']), str(record['action']))}."
    ]
    arguments: Sequence[Mapping[str, Any]] = record["arguments"]
    if arguments:
        lines.append("Arguments:")
        lines.extend(f"  {_argument(a)}" for a in arguments)
    else:
        lines.append("Arguments: none arrived.")
    attacks: Sequence[Mapping[str, Any]] = record["attacks"]
    lines.append(f"Attacks: {_attacks(attacks)}." if attacks else "Attacks: none.")
    if record.get("semantics") != "grounded" or len(record.get("extensions") or []) != 1:
        lines.append(f"Extensions ({record.get('semantics')}): {_extensions(record)}.")
    lines.append(f"Reason: {record['reason']}.")
    if record.get("tie"):
        lines.append(
            "Tie: the accepted arguments disagreed; the most restrictive decision won "
            "(deny > modify > allow)."
        )
    if record.get("timed_out"):
        missing = ", ".join(record.get("missing_checks") or []) or "none named"
        lines.append(
            f"Timed out: the policy's timeout passed without the expected check(s) {missing}; "
            "a missing check makes the request undecided, never an allow."
        )
    refused: Sequence[Mapping[str, Any]] = record.get("refused") or []
    if refused:
        lines.append("Refused signals (not arguments of this verdict):")
        lines.extend(f"  {r.get('id')}: {r.get('reason')}" for r in refused)
    return "\n".join(lines)


def is_verdict(record: Mapping[str, Any]) -> bool:
    """Whether a record is a verdict (it names a request) rather than a fact's decision."""
    return isinstance(record.get("request_id"), str)


def _argument(argument: Mapping[str, Any]) -> str:
    name = argument["id"]
    check = argument.get("check")
    who = name if check in (None, name) else f"{name} (check {check})"
    standing = _STANDING.get(str(argument.get("label")), str(argument.get("label")))
    if argument.get("label") == "in" and not argument.get("accepted", True):
        standing = "in the extension"
    return (
        f"{who} ({argument['kind']}, {argument['decision']}, {argument['strength']:g}): "
        f"{standing} — {argument['claim']}"
    )


def _attacks(attacks: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(
        f"{a['attacker']} {_VERB.get(str(a['type']), 'attacks (' + str(a['type']) + ')')} "
        f"{a['attacked']}"
        for a in attacks
    )


def _extensions(record: Mapping[str, Any]) -> str:
    found: Sequence[Sequence[str]] = record.get("extensions") or []
    if not found:
        return "none"
    return "; ".join("{" + ", ".join(e) + "}" for e in found)
