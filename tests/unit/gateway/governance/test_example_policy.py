"""The governance example's policy (examples/governance/policy.yaml) decides the example requests.

The signals are those the gateway's checks argue on the example inputs (the packs' answers
are tested against the real OPA in tests/integration/test_opa_packs.py); they are decided
here by the core's own verdict code, as the gateway decides locally and the worker decides
on the verdicts topic. The policy's attack rules, not the code, decide the conflicts: the
same research request without the rule `research_authorized undercut phi_detected` is denied.
"""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.argue.records import verdict_record
from claimwatch.core.argue.request import (
    RequestState,
    VerdictConfig,
    missing_checks,
    signal_entry,
)
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.durations import US_PER_S
from claimwatch.models.verdict import VerdictSignal
from claimwatch.policy.loading import load_policy, parse_policy

from tests.support.governance_examples import (
    EXAMPLES,
    GOVERNANCE_POLICY,
    TIE,
    Example,
    gateway_signals,
    without_research_rule,
)

AT_US = parse_rfc3339("2026-12-05T22:31:07.120311Z")


@pytest.fixture(scope="module")
def config() -> VerdictConfig:
    return VerdictConfig.from_policy(load_policy(GOVERNANCE_POLICY).policy)


def decided(config: VerdictConfig, name: str, request_id: str = "gw-example-result") -> Any:
    """The core's record of the example's request, decided at once (missing: timed out)."""
    row = EXAMPLES[name]
    entries = [
        signal_entry(VerdictSignal.model_validate(s))
        for s in gateway_signals(name, request_id, AT_US, tool="example")
    ]
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


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_request_is_decided_by_the_policy(config: VerdictConfig, name: str) -> None:
    row: Example = EXAMPLES[name]
    record = decided(config, name)
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
    assert decided(config, "untrusted")["tie"] is True


def test_the_research_phi_deny_is_defeated_by_the_rule(config: VerdictConfig) -> None:
    labels = {a["id"]: a["label"] for a in decided(config, "research")["arguments"]}
    assert {"opa_pii": "out", "opa_research": "in", "pii": "in"} == labels


def test_the_statement_conflict_leaves_the_extension_empty(config: VerdictConfig) -> None:
    record = decided(config, "export_research")
    assert [[]] == record["extensions"]
    assert {"opa_financial": "undec", "opa_research": "undec"} == {
        a["id"]: a["label"] for a in record["arguments"]
    }


def test_without_the_research_rule_the_phi_deny_wins() -> None:
    norule = VerdictConfig.from_policy(parse_policy(without_research_rule(), "norule"))
    assert 9 == len(norule.rules)
    record = decided(norule, "research")
    assert ("deny", "block") == (record["decision"], record["action"])
    assert ["opa_pii", "opa_research", "pii"] == record["accepted"]
    assert (
        "grounded extension {opa_pii, opa_research, pii}: accepted arguments disagree "
        f"(deny: opa_pii; modify: pii; allow: opa_research); {TIE}"
    ) == record["reason"]
