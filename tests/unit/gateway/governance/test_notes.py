"""The governance note of a phase, its sentence for each way a decision is applied."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.gateway.governance.checks import Outcome
from claimwatch.gateway.governance.decide import NO_MASK, local_verdict, signals_of
from claimwatch.gateway.governance.notes import phase_note, refused, sentence, with_notes
from claimwatch.gateway.governance.targets import Span
from claimwatch.policy.loading import load_policy
from mcp.types import CallToolResult, TextContent

from tests.support.governance_examples import EXAMPLES, GOVERNANCE_POLICY, outcomes

AT_US = 1_796_000_000_000_000
DOWN = "OPA at http://127.0.0.1:9 is unreachable"
EMAIL = Span("/content/0/text", 9, 26, "EMAIL")


@pytest.fixture(scope="module")
def config() -> VerdictConfig:
    return VerdictConfig.from_policy(load_policy(GOVERNANCE_POLICY).policy)


def decided(config: VerdictConfig, name: str) -> tuple[dict[str, Any], list[Outcome]]:
    row = EXAMPLES[name]
    outcome = outcomes(name, 1.04)
    if name == "opa_down":
        outcome.insert(0, Outcome("opa_pii", None, DOWN, 3.0))
    signals = signals_of(
        outcome,
        request_id="gw-1-result",
        request_type=row.request_type,
        tool="t",
        phase="result",
        at_us=AT_US,
    )
    return local_verdict(config, "gw-1-result", row.request_type, signals, AT_US), outcome


@pytest.mark.parametrize(
    ("row", "applied", "expected"),
    [
        (
            "trusted",
            "passed",
            "claimwatch governance fetch_page (result): passed: opa_pii (allow) "
            "accepted, trust_domain (allow) accepted; verdict {id}",
        ),
        (
            "untrusted",
            "masked",
            "claimwatch governance fetch_page (result): masked 2 items "
            "(EMAIL ×2): pii (modify) accepted, trust_domain (allow) accepted; verdict {id}",
        ),
        (
            "marketing",
            "denied",
            "claimwatch governance denied fetch_page (result): opa_pii says "
            "deny (phi_detected: a medical record number together with a diagnosis code (PHI)) "
            "and no accepted argument defeats it; verdict {id}",
        ),
        (
            "export_research",
            "escalated_denied",
            "claimwatch governance escalated fetch_page "
            "(result): no argument survives its attackers (grounded extension empty); denied — ask "
            "a person; verdict {id}",
        ),
        (
            "export_research",
            "escalated_passed",
            "claimwatch governance escalated fetch_page "
            "(result): no argument survives its attackers (grounded extension empty); passed "
            "unchanged (on_undecided: annotate) — treat it as unchecked; verdict {id}",
        ),
        (
            "opa_down",
            "escalated_denied",
            "claimwatch governance escalated fetch_page (result): "
            f"check(s) without an argument (opa_pii: {DOWN}), so nothing may pass unchecked; "
            "denied — ask a person; verdict {id}",
        ),
    ],
)
def test_the_sentence_of_each_applied(
    config: VerdictConfig, row: str, applied: str, expected: str
) -> None:
    record, outcomes = decided(config, row)
    masked = [(EMAIL, "pii"), (Span("/content/0/text", 30, 45, "EMAIL"), "pii")]
    note = phase_note(
        record,
        outcomes,
        phase="result",
        applied=applied,  # type: ignore[arg-type]
        masked=masked if applied == "masked" else [],
        recorded="sent",
    )
    assert expected.format(id=record["decision_id"]) == sentence("fetch_page", note)


def test_a_modify_with_nothing_to_mask_says_why_it_was_denied(config: VerdictConfig) -> None:
    record, outcomes = decided(config, "untrusted")
    note = phase_note(
        record, outcomes, phase="result", applied="denied", recorded="sent", why=NO_MASK
    )
    assert (
        f"claimwatch governance denied fetch_page (result): {NO_MASK}; verdict "
        f"{record['decision_id']}" == sentence("fetch_page", note)
    )


def test_the_note_is_taken_from_the_record_and_the_outcomes(config: VerdictConfig) -> None:
    record, outcomes = decided(config, "opa_down")
    note = phase_note(
        record, outcomes, phase="result", applied="escalated_denied", recorded="queued"
    )
    assert {
        "phase": "result",
        "request_id": "gw-1-result",
        "request_type": "web_content",
        "decision": "undecided",
        "action": "escalate",
        "applied": "escalated_denied",
        "decision_id": record["decision_id"],
        "policy_version": "governance-demo-1",
        "accepted": ["trust_domain"],
        "missing_checks": ["opa_pii"],
        "recorded": "queued",
    } == {
        k: note[k]
        for k in (
            "phase",
            "request_id",
            "request_type",
            "decision",
            "action",
            "applied",
            "decision_id",
            "policy_version",
            "accepted",
            "missing_checks",
            "recorded",
        )
    }
    assert [
        {"name": "opa_pii", "status": "failed", "ms": 3.0, "error": DOWN},
        {"name": "pii", "status": "ok", "ms": 1.0},
        {"name": "trust_domain", "status": "ok", "ms": 1.0},
    ] == note["checks"]
    assert [{"attacker": "trust_domain", "attacked": "pii", "type": "undermine"}] == note["attacks"]


def test_a_refusal_is_an_error_result_with_every_phase_note(config: VerdictConfig) -> None:
    record, outcomes = decided(config, "marketing")
    note = phase_note(record, outcomes, phase="result", applied="denied", recorded="sent")
    earlier = {"phase": "arguments", "applied": "passed"}
    result = refused("read_record", {"arguments": earlier, "result": note}, "result")
    assert result.is_error
    assert {"governance": {"arguments": earlier, "result": note}} == (
        (result.structured_content or {})["claimwatch"]
    )
    assert [sentence("read_record", note)] == [getattr(b, "text", None) for b in result.content]


def test_a_passed_result_keeps_its_content_and_an_existing_note(config: VerdictConfig) -> None:
    record, outcomes = decided(config, "trusted")
    note = phase_note(record, outcomes, phase="result", applied="passed", recorded="sent")
    upstream = CallToolResult(
        content=[TextContent(type="text", text="page")],
        structured_content={"page": 1, "claimwatch": {"outcome": "resolved"}},
    )
    annotated = with_notes(upstream, "fetch_page", {"result": note})
    assert ["page", sentence("fetch_page", note)] == [
        getattr(b, "text", None) for b in annotated.content
    ]
    assert {"page": 1, "claimwatch": {"outcome": "resolved", "governance": {"result": note}}} == (
        annotated.structured_content
    )
    assert upstream is with_notes(upstream, "fetch_page", {})
