"""The verdicts stream step: policy attack rules, expected checks, timeout, late signals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from claimwatch.core.argue import VerdictArgument
from claimwatch.core.argue.verdicts import (
    RequestState,
    VerdictConfig,
    VerdictProcessor,
    VerdictRunner,
)
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import Policy
from claimwatch.models.verdict import VerdictDecision, VerdictSignal

from tests.support.clocks import SECOND, T0
from tests.support.paths import REPO
from tests.support.verdicts import BASELINE, PII, POLICY, TRUST, signal_obj

ROOT = REPO

# ---------------------------------------------------------------- policy and verdict stream


def _config() -> VerdictConfig:
    return VerdictConfig.from_policy(Policy.model_validate(POLICY))


def _signal(
    argument: VerdictArgument, at_s: float, request: str = "req-1", **extra: Any
) -> VerdictSignal:
    return VerdictSignal.model_validate(signal_obj(argument, _at(at_s), request, **extra))


def _at(seconds: float) -> int:
    return T0 + round(seconds * SECOND)


def test_policy_without_argumentation_section_stays_valid() -> None:
    """The example policy has no argumentation section and gets the defaults."""
    from claimwatch.policy.loading import load_policy

    policy = load_policy(ROOT / "examples" / "policy.yaml").policy
    assert ([], "grounded", 10 * SECOND) == (
        policy.argumentation.attack_rules,
        policy.argumentation.semantics,
        policy.argumentation.timeout,
    )


def test_policy_refuses_two_rules_for_one_pair() -> None:
    """Two attack rules for the same pair of kinds are ambiguous and refused."""
    rules = [{"attacker_kind": "a", "attacked_kind": "b", "type": t} for t in ("rebut", "undercut")]
    with pytest.raises(ValueError, match="two attack rules for a -> b"):
        Policy.model_validate({"policy_version": "x", "argumentation": {"attack_rules": rules}})


def test_request_is_decided_when_the_expected_checks_arrived() -> None:
    """The third expected check completes the request: the worked example's allow, at once."""
    processor = VerdictProcessor(_config())
    state: RequestState | None = None
    outs: list[list[dict[str, Any]]] = []
    for argument, at in ((BASELINE, 0.0), (PII, 0.5), (TRUST, 1.0)):
        state, out = processor.step(state, _signal(argument, at), _at(at))
        outs.append(out)
    assert [0, 0, 1] == [len(out) for out in outs]
    record = outs[2][0]
    VerdictDecision.model_validate(record)
    assert ("allow", "proceed", False, []) == (
        record["decision"],
        record["action"],
        record["timed_out"],
        record["missing_checks"],
    )
    assert ["baseline_allow", "knowledge_trust_0"] == record["accepted"]
    assert format_rfc3339(_at(1.0)) == record["decided_at"]
    assert ["in", "in", "out"] == [a["label"] for a in record["arguments"]]


def test_timeout_with_missing_checks_is_undecided() -> None:
    """Without the knowledge hub by the deadline the request is undecided and escalates."""
    runner = VerdictRunner(_config())
    assert [] == runner.on_signal(_signal(BASELINE, 0.0))
    assert [] == runner.on_signal(_signal(PII, 1.0))
    assert [] == runner.on_clock(_at(4.9))
    out = runner.on_clock(_at(7.0))
    assert 1 == len(out)
    record = VerdictDecision.model_validate(out[0])
    assert ("undecided", "escalate", True, ["knowledge-hub"]) == (
        record.decision,
        record.action,
        record.timed_out,
        record.missing_checks,
    )
    assert format_rfc3339(_at(5.0)) == record.decided_at
    assert [["pii_moderate"]] == record.extensions
    expected = (
        "timed out after 5s without check(s) knowledge-hub; undecided, escalate (the arrived "
        "checks alone: grounded extension {pii_moderate}: every accepted argument says modify)"
    )
    assert expected == record.reason


def test_late_and_repeated_signals_are_dropped_then_forgotten() -> None:
    """After the decision a late signal changes nothing; after `remember` the id is forgotten."""
    runner = VerdictRunner(_config())
    runner.on_signal(_signal(BASELINE, 0.0))
    assert [] == runner.on_signal(_signal(BASELINE, 0.0))
    assert 1 == runner.requests["req-1"].dropped
    decided = runner.on_clock(_at(6.0))
    assert ["undecided"] == [d["decision"] for d in decided]
    assert [] == runner.on_signal(_signal(TRUST, 7.0))
    assert 2 == runner.requests["req-1"].dropped
    assert [] == runner.on_clock(_at(5.0 + 60.0))
    assert {} == runner.requests


def test_default_request_type_and_replacement_by_a_newer_signal() -> None:
    """A request type without its own list waits for the `*` checks; a newer signal replaces."""
    processor = VerdictProcessor(_config())
    state, out = processor.step(None, _signal(BASELINE, 0.0, request_type="chat"), _at(0.0))
    deny = VerdictArgument("pii_moderate", "pii-scanner", "pii_detected", "SSN", 0.9, "deny")
    state, out = processor.step(state, _signal(PII, 0.5, request_type="chat"), _at(0.5))
    assert ["modify"] == [d["decision"] for d in out]
    assert state is not None
    fresh = RequestState.from_obj(json.loads(json.dumps(state.to_obj())))
    assert state.to_obj() == fresh.to_obj()
    runner = VerdictRunner(_config())
    runner.on_signal(_signal(PII, 0.1, request="r2", request_type="chat"))
    runner.on_signal(_signal(deny, 0.2, request="r2", request_type="chat"))
    out = runner.on_signal(_signal(BASELINE, 0.3, request="r2", request_type="chat"))
    assert ["deny"] == [d["decision"] for d in out]


def test_decisions_come_out_in_deadline_order_and_ids_are_deterministic() -> None:
    """Several requests timing out at once are decided by deadline; ids repeat on a replay."""

    def run() -> list[tuple[str, str]]:
        runner = VerdictRunner(_config())
        for i, request in enumerate(("r3", "r1", "r2")):
            runner.on_signal(_signal(BASELINE, i * 0.1, request=request))
        return [(d["request_id"], d["decision_id"]) for d in runner.on_clock(_at(100.0))]

    first = run()
    assert ["r3", "r1", "r2"] == [request for request, _ in first]
    assert first == run()


def test_schema_files_for_verdicts_are_generated() -> None:
    """Both verdict schemas are among the checked-in schema files."""
    from claimwatch.models.generate import OUT_DIR

    names = {p.name for p in OUT_DIR.glob("*.schema.json")}
    expected = {"verdict_signal.schema.json", "verdict_decision.schema.json"}
    assert expected == expected & names
