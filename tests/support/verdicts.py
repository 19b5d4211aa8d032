"""Verdict arguments and the verdict policy the tests share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from claimwatch.core.argue import VerdictArgument
from claimwatch.core.timeutil import format_rfc3339

from tests.support.paths import REPO

BASELINE = VerdictArgument("baseline_allow", "opa", "baseline", "allowed by default", 0.3, "allow")


PII = VerdictArgument(
    "pii_moderate", "pii-scanner", "pii_detected", "2 e-mails: mask", 0.6, "modify"
)

TRUST = VerdictArgument(
    "knowledge_trust_0", "knowledge-hub", "trusted_domain", "trusted", 0.8, "allow"
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


POLICY: dict[str, Any] = {
    "policy_version": "verdicts-1",
    "argumentation": {
        "attack_rules": [
            {"attacker_kind": "pii_detected", "attacked_kind": "baseline", "type": "undercut"},
            {
                "attacker_kind": "trusted_domain",
                "attacked_kind": "pii_detected",
                "type": "undermine",
            },
        ],
        "expected_checks": {
            "upload": ["opa", "pii-scanner", "knowledge-hub"],
            "*": ["opa", "pii-scanner"],
        },
        "timeout": "5s",
        "remember": "60s",
    },
}


def signal_obj(
    argument: VerdictArgument, at_us: int, request: str = "req-1", **extra: Any
) -> dict[str, Any]:
    """The JSON of one check's signal for an upload request, observed at `at_us`."""
    return {
        "request_id": request,
        "request_type": "upload",
        "check": argument.check,
        "argument": argument.id,
        "kind": argument.kind,
        "claim": argument.claim,
        "strength": argument.strength,
        "decision": argument.decision,
        "observed_at": format_rfc3339(at_us),
        **extra,
    }


def many(count: int, kind: str = "noise", claim: str = "x") -> list[VerdictArgument]:
    """`count` distinct arguments of one kind, each its own check, all allowing."""
    return [VerdictArgument(f"a{i}", f"check-{i}", kind, claim, 0.5, "allow") for i in range(count)]


def signal_record(argument: VerdictArgument, at: datetime, request: str) -> tuple[bytes, bytes]:
    """One check's signal for an upload request, observed at `at`, as a (key, value) record."""
    at_us = (at - _EPOCH) // timedelta(microseconds=1)
    return request.encode(), orjson.dumps(signal_obj(argument, at_us, request))


#: The governance example's policy: the request types' expected checks and the attack rules
#: between the packs (the file the example's worker and gateway run).
GOVERNANCE_POLICY_FILE = REPO / "examples" / "governance" / "policy.yaml"
#: The rule that lets an authorized research requester defeat the PHI block.
RESEARCH_RULE = (
    "    - {attacker_kind: research_authorized,  attacked_kind: phi_detected,"
    "         type: undercut}\n"
)


def governance_policy(*, research_rule: bool = True) -> str:
    """The example policy; without `research_rule`, the PHI deny is not defeated by research."""
    text = GOVERNANCE_POLICY_FILE.read_text()
    if research_rule:
        return text
    assert RESEARCH_RULE in text
    return text.replace(RESEARCH_RULE, "")


#: One check's argument as the gateway argues it: (check, kind, decision, strength, claim).
Argued = tuple[str, str, str, float, str]

#: The example requests of design section 1.6: request type and the arguments that arrive.
SCENARIOS: dict[str, tuple[str, tuple[Argued, ...]]] = {
    "trusted": (
        "web_content",
        (
            ("opa_pii", "baseline_allow", "allow", 0.3, "no rule of the PII pack applies"),
            ("pii", "pii_detected", "modify", 0.6, "2 PII items (email ×2) — masking required"),
            ("trust_domain", "trusted_domain", "allow", 0.8, "domain:example.org trust is trusted"),
        ),
    ),
    "untrusted": (
        "web_content",
        (
            ("opa_pii", "baseline_allow", "allow", 0.3, "no rule of the PII pack applies"),
            ("pii", "pii_detected", "modify", 0.6, "2 PII items (email ×2) — masking required"),
            ("trust_domain", "trust_unknown", "allow", 0.0, "domain:mail.example.net: no decision"),
        ),
    ),
    "research": (
        "record_read",
        (
            ("opa_pii", "phi_detected", "deny", 0.9, "a medical record number with a diagnosis"),
            ("opa_research", "research_authorized", "allow", 0.7, "irb.example.edu: research"),
            ("pii", "pii_detected", "modify", 0.6, "1 PII item (email ×1) — masking required"),
        ),
    ),
    "marketing": (
        "record_read",
        (
            ("opa_pii", "phi_detected", "deny", 0.9, "a medical record number with a diagnosis"),
            ("opa_research", "baseline_allow", "allow", 0.3, "no rule of the research pack"),
            ("pii", "pii_detected", "modify", 0.6, "1 PII item (email ×1) — masking required"),
        ),
    ),
    "export_research": (
        "statement_export",
        (
            ("opa_financial", "financial_restricted", "deny", 0.8, "for audits only"),
            ("opa_research", "research_authorized", "allow", 0.7, "irb.example.edu: research"),
        ),
    ),
    "opa_down": (
        "web_content",
        (
            ("pii", "pii_detected", "modify", 0.6, "2 PII items (email ×2) — masking required"),
            ("trust_domain", "trusted_domain", "allow", 0.8, "domain:example.org trust is trusted"),
        ),
    ),
}


def gateway_signal(
    request_id: str,
    request_type: str,
    argued: Argued,
    at_us: int,
    tool: str = "fetch_page",
    phase: str = "result",
) -> dict[str, Any]:
    """One check's signal as the gateway sends it to `<prefix>verdicts` (design 1.6)."""
    check, kind, decision, strength, claim = argued
    return {
        "request_id": request_id,
        "request_type": request_type,
        "check": check,
        "argument": check,
        "kind": kind,
        "claim": claim,
        "strength": strength,
        "decision": decision,
        "observed_at": format_rfc3339(at_us),
        "tool": tool,
        "phase": phase,
    }


def scenario_signals(name: str, request_id: str, at_us: int) -> list[dict[str, Any]]:
    """The signals of one example request, all observed at `at_us`, in check-name order."""
    request_type, argued = SCENARIOS[name]
    return [gateway_signal(request_id, request_type, a, at_us) for a in sorted(argued)]
