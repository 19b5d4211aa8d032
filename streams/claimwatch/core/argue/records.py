"""Verdict decision records: the decided request, its attack graph and reason, or its error."""

from __future__ import annotations

import hashlib
from typing import Any

from claimwatch.core.argue.decide import ACTIONS, VerdictArgument, decide
from claimwatch.core.argue.framework import name_key
from claimwatch.core.argue.request import RequestState, VerdictConfig, missing_checks
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.durations import format_duration


def verdict_record(
    config: VerdictConfig, state: RequestState, at_us: int, *, timed_out: bool
) -> dict[str, Any]:
    """The decision record of a request (streams/claimwatch/models/verdict.py `VerdictDecision`)."""
    expected = config.expected_for(state.request_type)
    missing = missing_checks(state, expected)
    entries = [state.signals[k] for k in sorted(state.signals, key=name_key)]
    arguments = [
        VerdictArgument(e["id"], e["check"], e["kind"], e["claim"], e["strength"], e["decision"])
        for e in entries
    ]
    verdict = decide(arguments, config.rules, config.semantics, config.limits.extensions)
    decision, reason = verdict.decision, verdict.reason
    if state.limit is not None:
        decision = "undecided"
        reason = f"{state.limit}; undecided, escalate (the held checks alone: {verdict.reason})"
    elif timed_out:
        decision = "undecided"
        reason = (
            f"timed out after {format_duration(config.timeout_us)} without check(s) "
            f"{', '.join(missing)}; undecided, escalate "
            f"(the arrived checks alone: {verdict.reason})"
        )
    if state.refused:
        reason += f"; {len(state.refused)} signal(s) refused: {', '.join(sorted(state.refused))}"
    accepted = set(verdict.accepted)
    return {
        "decision_id": _decision_id(config, state, entries, timed_out),
        "request_id": state.request_id,
        "request_type": state.request_type,
        "policy_version": config.policy_version,
        "semantics": verdict.semantics,
        "decision": decision,
        "action": ACTIONS[decision],
        "reason": reason,
        "tie": verdict.tie,
        "timed_out": timed_out,
        "expected_checks": list(expected),
        "missing_checks": missing,
        "accepted": verdict.accepted,
        "extensions": verdict.extensions,
        "arguments": [
            {
                "id": e["id"],
                "check": e["check"],
                "kind": e["kind"],
                "claim": e["claim"],
                "strength": e["strength"],
                "decision": e["decision"],
                "observed_at": format_rfc3339(e["observed_us"]),
                "label": verdict.labels[e["id"]],
                "accepted": e["id"] in accepted,
            }
            for e in entries
        ],
        "attacks": [
            {"attacker": a.attacker, "attacked": a.attacked, "type": a.type}
            for a in verdict.attacks
        ],
        "refused": [{"id": k, "reason": v} for k, v in sorted(state.refused.items())],
        "decided_at": format_rfc3339(at_us),
    }


def internal_error_record(
    config: VerdictConfig, state: RequestState, at_us: int, reason: str
) -> dict[str, Any]:
    """The decision of a request whose handling raised: `undecided` (escalate), the error."""
    digest = hashlib.sha256()
    for part in (config.policy_version, state.request_id, "internal_error", reason):
        digest.update(part.encode())
        digest.update(b"\x1f")
    return {
        "decision_id": "vrd_" + digest.hexdigest()[:32],
        "request_id": state.request_id,
        "request_type": state.request_type,
        "policy_version": config.policy_version,
        "semantics": config.semantics.value,
        "decision": "undecided",
        "action": ACTIONS["undecided"],
        "reason": reason,
        "tie": False,
        "timed_out": False,
        "expected_checks": list(config.expected_for(state.request_type)),
        "missing_checks": [],
        "accepted": [],
        "extensions": [],
        "arguments": [],
        "attacks": [],
        "refused": [],
        "decided_at": format_rfc3339(at_us),
    }


def _decision_id(
    config: VerdictConfig, state: RequestState, entries: list[dict[str, Any]], timed_out: bool
) -> str:
    digest = hashlib.sha256()
    for part in (config.policy_version, state.request_id, config.semantics.value, str(timed_out)):
        digest.update(part.encode())
        digest.update(b"\x1f")
    if state.limit is not None or state.refused:  # absent from earlier ids: they stay as they were
        for part in (state.limit or "", *sorted(state.refused)):
            digest.update(f"\x1d{part}".encode())
    for e in entries:
        fields = (e["id"], e["check"], e["kind"], e["decision"], repr(e["strength"]), e["claim"])
        digest.update(b"\x1e")
        digest.update("\x1f".join(fields).encode())
    return "vrd_" + digest.hexdigest()[:32]
