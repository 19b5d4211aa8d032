"""The gateway decides a phase as the worker does: same record but for `decided_at`, same id."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.core.argue.verdicts import VerdictRunner
from claimwatch.gateway.governance.checks import Outcome
from claimwatch.gateway.governance.decide import (
    applied_of,
    local_verdict,
    mask_of,
    signals_of,
)
from claimwatch.gateway.governance.targets import Mask, PatternMask, Span
from claimwatch.policy.loading import load_policy

from tests.support.checks import arg
from tests.support.governance_examples import EXAMPLES, GOVERNANCE_POLICY, outcomes

AT_US = 1_796_000_000_000_000  # 2026-11-29


@pytest.fixture(scope="module")
def config() -> VerdictConfig:
    return VerdictConfig.from_policy(load_policy(GOVERNANCE_POLICY).policy)


def worker_record(config: VerdictConfig, name: str, request_id: str) -> dict[str, Any]:
    """What the worker's pure step writes for the example's signals (past the timeout too)."""
    signals = signals_of(
        outcomes(name),
        request_id=request_id,
        request_type=EXAMPLES[name].request_type,
        tool="t",
        phase="result",
        at_us=AT_US,
    )
    runner = VerdictRunner(config)
    out: list[dict[str, Any]] = []
    for signal in signals:
        out += runner.on_signal(signal)
    out += runner.on_clock(AT_US + config.timeout_us + 1)
    (record,) = out
    return record


def without_time(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "decided_at"}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_local_verdict_equals_the_worker_step(config: VerdictConfig, name: str) -> None:
    row = EXAMPLES[name]
    request_id = f"gw-{name}-result"
    signals = signals_of(
        outcomes(name),
        request_id=request_id,
        request_type=row.request_type,
        tool="t",
        phase="result",
        at_us=AT_US,
    )
    local = local_verdict(config, request_id, row.request_type, signals, AT_US)
    worker = worker_record(config, name, request_id)
    assert without_time(worker) == without_time(local)
    assert (row.decision, row.accepted, row.reason, row.missing) == (
        local["decision"],
        local["accepted"],
        local["reason"],
        local["missing_checks"],
    )


def test_the_missing_check_is_timed_out_and_named(config: VerdictConfig) -> None:
    row = EXAMPLES["opa_down"]
    signals = signals_of(
        outcomes("opa_down"),
        request_id="gw-x-result",
        request_type=row.request_type,
        tool="t",
        phase="result",
        at_us=AT_US,
    )
    record = local_verdict(config, "gw-x-result", row.request_type, signals, AT_US)
    assert (True, ["opa_pii"]) == (record["timed_out"], record["missing_checks"])
    assert record["reason"].startswith("timed out after 2s without check(s) opa_pii; undecided")


def test_failed_checks_send_no_signal_and_extras_ride_along() -> None:
    outcomes = [
        Outcome("a", arg("k", "allow", 0.5), None, 1.0),
        Outcome("b", None, "OPA at http://x is unreachable", 2.0),
    ]
    (signal,) = signals_of(
        outcomes, request_id="r", request_type="t", tool="fetch_page", phase="result", at_us=AT_US
    )
    dumped = signal.model_dump(mode="json")
    assert ("a", "a", "fetch_page", "result") == (
        dumped["check"],
        dumped["argument"],
        dumped["tool"],
        dumped["phase"],
    )


SPAN = Mask(spans=(Span("/content/0/text", 0, 5, "EMAIL"),))


def record(decision: str, accepted: dict[str, bool]) -> dict[str, Any]:
    return {
        "decision": decision,
        "arguments": [{"id": name, "accepted": ok} for name, ok in accepted.items()],
    }


def test_the_mask_is_the_union_of_the_accepted_modify_arguments() -> None:
    pattern = Mask(patterns=(PatternMask("x+", "IBAN"),))
    arguments = {
        "pii": arg("pii_detected", "modify", 0.6, mask=SPAN),
        "fin": arg("financial_masking", "modify", 0.6, mask=pattern),
        "out": arg("pii_detected", "modify", 0.6, mask=Mask(pointers=("/a",))),
        "allow": arg("k", "allow", 0.3, mask=Mask(pointers=("/b",))),
    }
    decided = record("modify", {"pii": True, "fin": True, "out": False, "allow": True})
    assert SPAN.union(pattern) == mask_of(decided, arguments)


def test_modify_without_a_mask_is_denied() -> None:
    arguments = {"pii": arg("pii_detected", "modify", 0.6)}  # names nothing to mask
    decided = record("modify", {"pii": True})
    mask = mask_of(decided, arguments)
    assert mask.empty()
    assert "denied" == applied_of(decided, "deny", mask)
    assert "masked" == applied_of(decided, "deny", SPAN)


@pytest.mark.parametrize(
    ("decision", "on_undecided", "expected"),
    [
        ("allow", "deny", "passed"),
        ("allow", "annotate", "passed"),
        ("modify", "deny", "masked"),
        ("modify", "annotate", "masked"),
        ("deny", "deny", "denied"),
        ("deny", "annotate", "denied"),
        ("undecided", "deny", "escalated_denied"),
        ("undecided", "annotate", "escalated_passed"),
    ],
)
def test_applied_for_each_decision(decision: str, on_undecided: str, expected: str) -> None:
    assert expected == applied_of({"decision": decision}, on_undecided, SPAN)  # type: ignore[arg-type]
