"""The governance example's policy (examples/governance/policy.yaml) decides the example requests.

The signals are those the gateway's checks argue on the example inputs (the packs' answers
are tested against the real OPA in tests/integration/test_opa_packs.py); they are decided
here by the core's own verdict code, as the gateway decides locally and the worker decides
on the verdicts topic. The policy's attack rules, not the code, decide the conflicts: the
same research request without the rule `research_authorized undercut phi_detected` is denied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from claimwatch.core.argue.records import verdict_record
from claimwatch.core.argue.request import (
    RequestState,
    VerdictConfig,
    missing_checks,
    signal_entry,
)
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.models.durations import US_PER_S
from claimwatch.models.verdict import VerdictSignal
from claimwatch.policy.loading import load_policy, parse_policy

from tests.support.paths import REPO

POLICY_FILE = REPO / "examples" / "governance" / "policy.yaml"
NORULE_LINE = (
    "    - {attacker_kind: research_authorized,  attacked_kind: phi_detected,"
    "         type: undercut}\n"
)
AT_US = parse_rfc3339("2026-12-05T22:31:07.120311Z")

# (check, kind, decision, strength, claim): what each check argues on the example inputs
OPA_PII_CLEAR = ("opa_pii", "baseline_allow", "allow", 0.3, "no rule of the PII pack applies")
OPA_PII_PHI = (
    "opa_pii",
    "phi_detected",
    "deny",
    0.9,
    "a medical record number together with a diagnosis code (PHI)",
)
PII_EMAILS = ("pii", "pii_detected", "modify", 0.6, "2 PII items (email ×2) — masking required")
PII_EMAIL = ("pii", "pii_detected", "modify", 0.6, "1 PII item (email ×1) — masking required")
TRUSTED = (
    "trust_domain",
    "trusted_domain",
    "allow",
    0.8,
    "domain:example.org trust is trusted (decision vrd_9c1e, from security-team)",
)
UNKNOWN = (
    "trust_domain",
    "trust_unknown",
    "allow",
    0.0,
    "domain:mail.example.net trust: resolved untrusted, not mapped",
)
RESEARCH = (
    "opa_research",
    "research_authorized",
    "allow",
    0.7,
    "irb.example.edu is an authorized research requester, purpose research",
)
RESEARCH_CLEAR = (
    "opa_research",
    "baseline_allow",
    "allow",
    0.3,
    "no rule of the research pack applies",
)
RESTRICTED = (
    "opa_financial",
    "financial_restricted",
    "deny",
    0.8,
    "account statements leave the finance domain for audits only, not for research",
)
MASKING = (
    "opa_financial",
    "financial_masking",
    "modify",
    0.6,
    "an audit export: account numbers are masked",
)
TIE = "the most restrictive decision wins (deny > modify > allow)"


@dataclass(frozen=True)
class Row:
    """One example request and what the policy decides (design section 1.6)."""

    request_type: str
    signals: tuple[tuple[str, str, str, float, str], ...]
    decision: str
    action: str
    accepted: list[str]
    attacks: list[tuple[str, str, str]]
    reason: str
    missing: list[str]


ROWS = {
    "web_content_trusted": Row(
        "web_content",
        (OPA_PII_CLEAR, PII_EMAILS, TRUSTED),
        "allow",
        "proceed",
        ["opa_pii", "trust_domain"],
        [("pii", "opa_pii", "undercut"), ("trust_domain", "pii", "undermine")],
        "grounded extension {opa_pii, trust_domain}: every accepted argument says allow",
        [],
    ),
    "web_content_untrusted": Row(
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
    "record_read_research": Row(
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
    "record_read_marketing": Row(
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
    "statement_export_research": Row(
        "statement_export",
        (RESTRICTED, RESEARCH),
        "undecided",
        "escalate",
        [],
        [("opa_financial", "opa_research", "rebut"), ("opa_research", "opa_financial", "rebut")],
        "grounded extension {}: no argument survives its attackers; escalate",
        [],
    ),
    "statement_export_audit": Row(
        "statement_export",
        (MASKING, RESEARCH_CLEAR),
        "modify",
        "modify",
        ["opa_financial"],
        [("opa_financial", "opa_research", "undercut")],
        "grounded extension {opa_financial}: every accepted argument says modify",
        [],
    ),
    "web_content_trusted_opa_down": Row(
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


@pytest.fixture(scope="module")
def config() -> VerdictConfig:
    return VerdictConfig.from_policy(load_policy(POLICY_FILE).policy)


def signals(row: Row, request_id: str) -> list[VerdictSignal]:
    """The row's signals as the gateway sends them (check = argument = the check's name)."""
    return [
        VerdictSignal(
            request_id=request_id,
            request_type=row.request_type,
            check=check,
            argument=check,
            kind=kind,
            claim=claim,
            strength=strength,
            decision=decision,  # type: ignore[arg-type]
            observed_at=format_rfc3339(AT_US),  # type: ignore[arg-type]
            tool="example",
            phase="result",
        )
        for check, kind, decision, strength, claim in row.signals
    ]


def decided(config: VerdictConfig, row: Row, request_id: str = "gw-example-result") -> Any:
    """The core's record of the row's request, decided at once (missing checks: timed out)."""
    entries = [signal_entry(s) for s in signals(row, request_id)]
    state = RequestState(
        request_id,
        AT_US,
        AT_US + config.timeout_us,
        row.request_type,
        {e["id"]: e for e in entries},
    )
    missing = missing_checks(state, config.expected_for(row.request_type))
    return verdict_record(config, state, AT_US, timed_out=bool(missing))


def test_the_example_policy_loads_and_compiles(config: VerdictConfig) -> None:
    assert "governance-demo-1" == config.policy_version
    assert "grounded" == config.semantics.value
    assert 2 * US_PER_S == config.timeout_us
    assert 10 == len(config.rules)
    assert {
        "web_content": ("opa_pii", "pii", "trust_domain"),
        "record_read": ("opa_pii", "opa_research", "pii"),
        "statement_export": ("opa_financial", "opa_research"),
        "outbound_message": ("pii",),
    } == dict(config.expected)


@pytest.mark.parametrize("name", list(ROWS))
def test_each_example_request_is_decided_by_the_policy(config: VerdictConfig, name: str) -> None:
    row = ROWS[name]
    record = decided(config, row)
    assert (row.decision, row.action, row.reason) == (
        record["decision"],
        record["action"],
        record["reason"],
    )
    assert row.accepted == record["accepted"]
    assert row.attacks == [(a["attacker"], a["attacked"], a["type"]) for a in record["attacks"]]
    assert (row.missing, bool(row.missing)) == (record["missing_checks"], record["timed_out"])
    accepted = {a["id"] for a in record["arguments"] if a["accepted"]}
    assert set(row.accepted) == accepted


def test_the_untrusted_masking_is_a_tie(config: VerdictConfig) -> None:
    assert decided(config, ROWS["web_content_untrusted"])["tie"] is True


def test_the_research_phi_deny_is_defeated_by_the_rule(config: VerdictConfig) -> None:
    labels = {
        a["id"]: a["label"] for a in decided(config, ROWS["record_read_research"])["arguments"]
    }
    assert {"opa_pii": "out", "opa_research": "in", "pii": "in"} == labels


def test_the_statement_conflict_leaves_the_extension_empty(config: VerdictConfig) -> None:
    record = decided(config, ROWS["statement_export_research"])
    assert [[]] == record["extensions"]
    assert {"opa_financial": "undec", "opa_research": "undec"} == {
        a["id"]: a["label"] for a in record["arguments"]
    }


def test_without_the_research_rule_the_phi_deny_wins() -> None:
    text = POLICY_FILE.read_text()
    assert 1 == text.count(NORULE_LINE)
    norule = VerdictConfig.from_policy(parse_policy(text.replace(NORULE_LINE, ""), "norule"))
    assert 9 == len(norule.rules)
    record = decided(norule, ROWS["record_read_research"])
    assert ("deny", "block") == (record["decision"], record["action"])
    assert ["opa_pii", "opa_research", "pii"] == record["accepted"]
    assert (
        "grounded extension {opa_pii, opa_research, pii}: accepted arguments disagree "
        f"(deny: opa_pii; modify: pii; allow: opa_research); {TIE}"
    ) == record["reason"]
