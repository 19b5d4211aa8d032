"""`explain_verdict`: each kind of verdict rendered from the record alone.

The records are the core's own (`VerdictRunner`, the worker's pure step) for the example
requests of the governance design under its policy (`tests.support.governance_examples`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.audit.explain_verdict import explain_verdict, is_verdict
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.core.argue.verdicts import VerdictRunner
from claimwatch.models.verdict import VerdictSignal
from claimwatch.policy.loading import load_policy

from tests.support.cli import run_cli
from tests.support.governance_examples import GOVERNANCE_POLICY, gateway_signals

AT_US = 1_800_000_000_000_000
CONFIG = VerdictConfig.from_policy(load_policy(GOVERNANCE_POLICY).policy)
TIE = (
    "Tie: the accepted arguments disagreed; the most restrictive decision won "
    "(deny > modify > allow)."
)
MODIFY = "proceed with the masking the accepted arguments name"
ESCALATE = "escalate: a person decides; nothing proceeds meanwhile"
E_MAILS = "2 PII items (email ×2) — masking required"
TRUSTED = "domain:example.org trust is trusted (decision vrd_9c1e, from security-team)"


def decided(name: str) -> dict[str, Any]:
    """The record the worker's step makes of one example request (past its timeout)."""
    runner = VerdictRunner(CONFIG)
    out: list[dict[str, Any]] = []
    for signal in gateway_signals(name, f"gw-{name}-result", AT_US):
        out += runner.on_signal(VerdictSignal.model_validate(signal))
    out += runner.on_clock(AT_US + CONFIG.timeout_us + 1)
    assert 1 == len(out), out
    return out[0]


def head(name: str, request_type: str, outcome: str) -> str:
    record = decided(name)
    return (
        f"verdict {record['decision_id']} on gw-{name}-result ({request_type}, policy "
        f"governance-demo-1): {outcome}."
    )


CASES = [
    (
        "trusted",
        [
            head("trusted", "web_content", "allow — proceed"),
            "Arguments:",
            "  opa_pii (baseline_allow, allow, 0.3): accepted — no rule of the PII pack applies",
            f"  pii (pii_detected, modify, 0.6): defeated — {E_MAILS}",
            f"  trust_domain (trusted_domain, allow, 0.8): accepted — {TRUSTED}",
            "Attacks: pii undercuts opa_pii; trust_domain undermines pii.",
            "Reason: grounded extension {opa_pii, trust_domain}: every accepted argument says "
            "allow.",
        ],
    ),
    (
        "untrusted",
        [
            head("untrusted", "web_content", f"modify — {MODIFY}"),
            "Arguments:",
            "  opa_pii (baseline_allow, allow, 0.3): defeated — no rule of the PII pack applies",
            f"  pii (pii_detected, modify, 0.6): accepted — {E_MAILS}",
            "  trust_domain (trust_unknown, allow, 0): accepted — domain:mail.example.net "
            "trust: resolved untrusted, not mapped",
            "Attacks: pii undercuts opa_pii.",
            "Reason: grounded extension {pii, trust_domain}: accepted arguments disagree "
            "(modify: pii; allow: trust_domain); the most restrictive decision wins "
            "(deny > modify > allow).",
            TIE,
        ],
    ),
    (
        "marketing",
        [
            head("marketing", "record_read", "deny — block the call"),
            "Arguments:",
            "  opa_pii (phi_detected, deny, 0.9): accepted — a medical record number together "
            "with a diagnosis code (PHI)",
            "  opa_research (baseline_allow, allow, 0.3): defeated — no rule of the research "
            "pack applies",
            "  pii (pii_detected, modify, 0.6): accepted — 1 PII item (email ×1) — masking "
            "required",
            "Attacks: opa_pii undercuts opa_research; pii undercuts opa_research.",
            "Reason: grounded extension {opa_pii, pii}: accepted arguments disagree (deny: "
            "opa_pii; modify: pii); the most restrictive decision wins (deny > modify > allow).",
            TIE,
        ],
    ),
    (
        "export_research",
        [
            head("export_research", "statement_export", f"undecided — {ESCALATE}"),
            "Arguments:",
            "  opa_financial (financial_restricted, deny, 0.8): undecided (neither accepted nor "
            "defeated) — account statements leave the finance domain for audits only, not for "
            "research",
            "  opa_research (research_authorized, allow, 0.7): undecided (neither accepted nor "
            "defeated) — irb.example.edu is an authorized research requester, purpose research",
            "Attacks: opa_financial rebuts opa_research; opa_research rebuts opa_financial.",
            "Reason: grounded extension {}: no argument survives its attackers; escalate.",
        ],
    ),
    (
        "opa_down",
        [
            head("opa_down", "web_content", f"undecided — {ESCALATE}"),
            "Arguments:",
            f"  pii (pii_detected, modify, 0.6): defeated — {E_MAILS}",
            f"  trust_domain (trusted_domain, allow, 0.8): accepted — {TRUSTED}",
            "Attacks: trust_domain undermines pii.",
            "Reason: timed out after 2s without check(s) opa_pii; undecided, escalate (the "
            "arrived checks alone: grounded extension {trust_domain}: every accepted argument "
            "says allow).",
            "Timed out: the policy's timeout passed without the expected check(s) opa_pii; a "
            "missing check makes the request undecided, never an allow.",
        ],
    ),
]


@pytest.mark.parametrize(("name", "lines"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_verdict_in_words(name: str, lines: list[str]) -> None:
    assert "\n".join(lines) == explain_verdict(decided(name))


def test_refused_signals_and_a_missing_request_type_are_named() -> None:
    record = {
        **decided("trusted"),
        "request_type": None,
        "refused": [{"id": "late", "reason": "observed 9s ahead of the clock"}],
    }
    text = explain_verdict(record)
    assert "(no request type, policy governance-demo-1)" in text
    assert text.endswith(
        "Refused signals (not arguments of this verdict):\n  late: observed 9s ahead of the clock"
    )


def test_a_verdict_is_told_from_a_facts_decision_by_its_request() -> None:
    assert (True, False) == (
        is_verdict(decided("trusted")),
        is_verdict({"decision_id": "dec_1", "subject": "invoice:INV-2"}),
    )


def test_the_command_renders_a_verdict_from_a_file(tmp_path: Path) -> None:
    records = [decided("marketing"), decided("trusted")]
    source = tmp_path / "verdicts.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    shown = run_cli("explain", records[1]["decision_id"], "--from", str(source))
    assert (0, explain_verdict(records[1]) + "\n") == (shown.returncode, shown.stdout.decode())


def test_an_incomplete_verdict_is_a_one_line_error(tmp_path: Path) -> None:
    record = decided("trusted")
    del record["arguments"]
    source = tmp_path / "verdicts.jsonl"
    source.write_bytes(orjson.dumps(record) + b"\n")
    shown = run_cli("explain", record["decision_id"], "--from", str(source))
    assert 1 == shown.returncode
    assert (
        f"decision {record['decision_id']} is not a complete decision record "
        "(KeyError: 'arguments')"
    ) in shown.stderr.decode()
