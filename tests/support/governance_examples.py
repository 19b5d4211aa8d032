"""The governance example's requests (design 43 section 1.6) and the policy that decides them.

One table, `EXAMPLES`, keyed by the requests' short names: what each check argues on the
example inputs and what the shipped policy (`GOVERNANCE_POLICY`,
examples/governance/policy.yaml) decides. The tests take from it what they need: the
checks' `Argument`s (`arguments`), the gateway's outcomes (`outcomes`) or the signals as
the gateway sends them to `<prefix>verdicts` (`gateway_signals`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from claimwatch.core.timeutil import format_rfc3339
from claimwatch.gateway.governance.checks import Argument, Outcome

from tests.support.paths import REPO

#: The governance example's policy: the file its worker runs and its gateway loads.
GOVERNANCE_POLICY: Final = REPO / "examples" / "governance" / "policy.yaml"
#: The rule that lets an authorized research requester defeat the PHI block.
RESEARCH_RULE: Final = (
    "    - {attacker_kind: research_authorized,  attacked_kind: phi_detected,"
    "         type: undercut}\n"
)


def without_research_rule() -> str:
    """The example policy's text without `research_authorized undercut phi_detected`."""
    text = GOVERNANCE_POLICY.read_text(encoding="utf-8")
    if 1 != text.count(RESEARCH_RULE):
        raise AssertionError(f"{GOVERNANCE_POLICY} does not hold the research rule once")
    return text.replace(RESEARCH_RULE, "")


class Argued(NamedTuple):
    """What one check argues on an example input (the signal's fields)."""

    check: str
    kind: str
    decision: str
    strength: float
    claim: str


OPA_PII_CLEAR = Argued("opa_pii", "baseline_allow", "allow", 0.3, "no rule of the PII pack applies")
OPA_PII_PHI = Argued(
    "opa_pii",
    "phi_detected",
    "deny",
    0.9,
    "a medical record number together with a diagnosis code (PHI)",
)
PII_EMAILS = Argued(
    "pii", "pii_detected", "modify", 0.6, "2 PII items (email ×2) — masking required"
)
PII_EMAIL = Argued("pii", "pii_detected", "modify", 0.6, "1 PII item (email ×1) — masking required")
TRUSTED = Argued(
    "trust_domain",
    "trusted_domain",
    "allow",
    0.8,
    "domain:example.org trust is trusted (decision vrd_9c1e, from security-team)",
)
UNKNOWN = Argued(
    "trust_domain",
    "trust_unknown",
    "allow",
    0.0,
    "domain:mail.example.net trust: resolved untrusted, not mapped",
)
RESEARCH = Argued(
    "opa_research",
    "research_authorized",
    "allow",
    0.7,
    "irb.example.edu is an authorized research requester, purpose research",
)
RESEARCH_CLEAR = Argued(
    "opa_research", "baseline_allow", "allow", 0.3, "no rule of the research pack applies"
)
RESTRICTED = Argued(
    "opa_financial",
    "financial_restricted",
    "deny",
    0.8,
    "account statements leave the finance domain for audits only, not for research",
)
MASKING = Argued(
    "opa_financial",
    "financial_masking",
    "modify",
    0.6,
    "an audit export: account numbers are masked",
)
TIE: Final = "the most restrictive decision wins (deny > modify > allow)"


@dataclass(frozen=True)
class Example:
    """One example request: what arrives and what the example policy decides."""

    request_type: str
    argued: tuple[Argued, ...]  # in check-name order; a check that failed argues nothing
    decision: str
    action: str
    accepted: list[str]
    attacks: list[tuple[str, str, str]]  # (attacker, attacked, type)
    reason: str
    missing: list[str]  # expected checks without an argument (the request timed out)


EXAMPLES: Final = {
    "trusted": Example(
        "web_content",
        (OPA_PII_CLEAR, PII_EMAILS, TRUSTED),
        "allow",
        "proceed",
        ["opa_pii", "trust_domain"],
        [("pii", "opa_pii", "undercut"), ("trust_domain", "pii", "undermine")],
        "grounded extension {opa_pii, trust_domain}: every accepted argument says allow",
        [],
    ),
    "untrusted": Example(
        "web_content",
        (OPA_PII_CLEAR, PII_EMAILS, UNKNOWN),
        "modify",
        "modify",
        ["pii", "trust_domain"],
        [("pii", "opa_pii", "undercut")],
        "grounded extension {pii, trust_domain}: accepted arguments disagree "
        f"(modify: pii; allow: trust_domain); {TIE}",
        [],
    ),
    "research": Example(
        "record_read",
        (OPA_PII_PHI, RESEARCH, PII_EMAIL),
        "modify",
        "modify",
        ["opa_research", "pii"],
        [("opa_research", "opa_pii", "undercut")],
        "grounded extension {opa_research, pii}: accepted arguments disagree "
        f"(modify: pii; allow: opa_research); {TIE}",
        [],
    ),
    "marketing": Example(
        "record_read",
        (OPA_PII_PHI, RESEARCH_CLEAR, PII_EMAIL),
        "deny",
        "block",
        ["opa_pii", "pii"],
        [("opa_pii", "opa_research", "undercut"), ("pii", "opa_research", "undercut")],
        "grounded extension {opa_pii, pii}: accepted arguments disagree "
        f"(deny: opa_pii; modify: pii); {TIE}",
        [],
    ),
    "export_research": Example(
        "statement_export",
        (RESTRICTED, RESEARCH),
        "undecided",
        "escalate",
        [],
        [("opa_financial", "opa_research", "rebut"), ("opa_research", "opa_financial", "rebut")],
        "grounded extension {}: no argument survives its attackers; escalate",
        [],
    ),
    "export_audit": Example(
        "statement_export",
        (MASKING, RESEARCH_CLEAR),
        "modify",
        "modify",
        ["opa_financial"],
        [("opa_financial", "opa_research", "undercut")],
        "grounded extension {opa_financial}: every accepted argument says modify",
        [],
    ),
    "opa_down": Example(
        "web_content",
        (PII_EMAILS, TRUSTED),
        "undecided",
        "escalate",
        ["trust_domain"],
        [("trust_domain", "pii", "undermine")],
        "timed out after 2s without check(s) opa_pii; undecided, escalate (the arrived checks "
        "alone: grounded extension {trust_domain}: every accepted argument says allow)",
        ["opa_pii"],
    ),
}


def arguments(name: str) -> dict[str, Argument]:
    """The example's arguments as the checks give them, by check name (nothing to mask)."""
    return {
        a.check: Argument(a.kind, a.claim, a.strength, a.decision)  # type: ignore[arg-type]
        for a in EXAMPLES[name].argued
    }


def outcomes(name: str, elapsed_ms: float = 1.0) -> list[Outcome]:
    """The gateway's outcomes of the example's checks that argued, in check-name order."""
    return [Outcome(c, a, None, elapsed_ms) for c, a in sorted(arguments(name).items())]


def gateway_signals(
    name: str, request_id: str, at_us: int, tool: str = "fetch_page", phase: str = "result"
) -> list[dict[str, Any]]:
    """The example's signals as the gateway sends them to `<prefix>verdicts` (design 1.6).

    One per check that argued, in check-name order, all observed at `at_us`; the argument
    id is the check's name.
    """
    example = EXAMPLES[name]
    return [
        {
            "request_id": request_id,
            "request_type": example.request_type,
            "check": a.check,
            "argument": a.check,
            "kind": a.kind,
            "claim": a.claim,
            "strength": a.strength,
            "decision": a.decision,
            "observed_at": format_rfc3339(at_us),
            "tool": tool,
            "phase": phase,
        }
        for a in sorted(example.argued)
    ]
