"""Strict by default: fields the policy does not name, values only unregistered sources carry."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.claim import claim_from_envelope
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor
from claimwatch.core.resolve import resolve
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import Policy

from tests.support.claims import claim, envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with


def test_a_misspelt_field_is_rejected_naming_the_version_and_the_field_meant(
    policy: CompiledPolicy, now_us: int
) -> None:
    """Issue 40 item 7: `paymentStatus` no longer resolves `proceed` under the defaults."""
    record = resolve([claim("c1", "billing-api", "paid", field="paymentStatus")], policy, now_us)
    (considered,) = record["claims"]
    expected = (
        "field 'paymentStatus' is not in policy arbitration-2026-09 "
        "(did you mean 'payment_status'?)"
    )
    assert ("rejected", "degrade", "rejected", expected) == (
        record["outcome"],
        record["action"],
        considered["disposition"],
        considered["error"],
    )
    assert f"all 1 claim(s) rejected; first: {expected}" == record["reason"]


@pytest.mark.parametrize(
    ("field", "suggestion"),
    [
        ("Payment-Status", " (did you mean 'payment_status'?)"),
        ("balanse", " (did you mean 'balance'?)"),
        ("risk_scores", " (did you mean 'risk_score'?)"),
        ("colour", ""),
        ("x" * 10_000, ""),
    ],
    ids=["case-and-dash", "typo", "plural", "unrelated", "huge"],
)
def test_the_suggestion_is_the_closest_policy_field(
    policy: CompiledPolicy, now_us: int, field: str, suggestion: str
) -> None:
    """Case, `_` and `-` aside first, then difflib; none for an unrelated or huge name."""
    record = resolve([claim("c1", "billing-api", "paid", field=field)], policy, now_us)
    error = record["claims"][0]["error"]
    assert error.endswith(f"is not in policy arbitration-2026-09{suggestion}")
    assert len(error) < 200


def deciding_unknown_fields() -> CompiledPolicy:
    """A policy that opts in to deciding unknown fields under its defaults."""
    return CompiledPolicy(
        Policy.model_validate(
            {
                "policy_version": "lenient-1",
                "defaults": {"unknown_fields": "decide"},
                "sources": {"ledger": {"authority": "system_of_record"}},
            }
        )
    )


def test_a_policy_may_opt_in_to_deciding_unknown_fields(now_us: int) -> None:
    """`defaults.unknown_fields: decide`: the field is decided as `json` under the defaults."""
    record = resolve(
        [claim("c1", "ledger", {"any": [1]}, field="extra")], deciding_unknown_fields(), now_us
    )
    assert ("resolved", {"any": [1]}, "proceed") == (
        record["outcome"],
        record["value"],
        record["action"],
    )


@pytest.mark.parametrize(
    ("field", "action"),
    [("payment_status", "escalate"), ("shipping_address", "degrade")],
    ids=["consequential", "not-consequential"],
)
def test_a_value_only_unregistered_sources_carry_never_proceeds(
    policy: CompiledPolicy, now_us: int, field: str, action: str
) -> None:
    """Issue 40 item 7: `billing_api` (not in the registry) alone no longer gives `proceed`."""
    value = "paid" if field == "payment_status" else "1 Main Street"
    claims = [
        claim("c1", "billing_api", value, field=field),
        claim("c2", "billing_api@eu", value, field=field, lineage="other"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", value, action) == (record["outcome"], record["value"], record["action"])
    assert record["reason"].endswith(
        "; carried by unregistered sources only: billing_api, billing_api@eu"
    )


def test_a_registered_source_of_the_winners_class_carries_the_value(
    policy: CompiledPolicy, now_us: int
) -> None:
    """`reporting-replica` (derived, registered) agreeing with `crm` (derived): proceed."""
    claims = [
        claim("c1", "crm", "paid", observed_at="2026-09-14T09:12:10Z"),
        claim("c2", "reporting-replica", "paid"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", "proceed") == (record["outcome"], record["action"])
    assert "unregistered" not in record["reason"]


def test_agreement_from_a_weaker_registered_class_does_not_carry_it(
    policy: CompiledPolicy, now_us: int
) -> None:
    """The user's (asserted) agreement does not verify what only `crm` says."""
    claims = [claim("c1", "crm", "paid"), claim("c2", "user", "paid")]
    record = resolve(claims, policy, now_us)
    dispositions = {c["source"]: c["disposition"] for c in record["claims"]}
    assert ({"crm": "won", "user": "corroborating"}, "escalate") == (
        dispositions,
        record["action"],
    )
    assert record["reason"].endswith("carried by unregistered sources only: crm")


def test_the_reason_lists_a_few_unregistered_names_and_counts_the_rest(
    policy: CompiledPolicy, now_us: int
) -> None:
    """Names are bounded in the reason: three, then how many more."""
    claims = [claim(f"c{i}", f"agent-{i}", "paid", lineage=f"l{i}") for i in range(6)]
    record = resolve(claims, policy, now_us)
    assert record["reason"].endswith(
        "carried by unregistered sources only: agent-0, agent-1, agent-2 and 3 more"
    )


def step_claim(cid: str, source: str, field: str = "payment_status") -> Any:
    """A claim of invoice:1 observed at T0."""
    return claim_from_envelope(
        envelope(
            cid, source, "paid", subject="invoice:1", field=field, observed_at=format_rfc3339(T0)
        )
    )


def test_the_partition_step_reports_unknown_fields_and_unregistered_only_values() -> None:
    """The events the worker counts in /metrics.

    `unknown_field` at arrival (the claim is rejected and copied to the DLQ; its fact is
    decided under the defaults' window), `unregistered_only` when such a decision is emitted.
    """
    proc = PartitionProcessor(policy_with(settle="0s"), 0, {})
    unknown = proc.on_claim(step_claim("u1", "ledger-a", field="paymentstatus"))
    assert {"unknown_field", "rejected"} <= set(unknown.events)
    assert ["field 'paymentstatus' is not in policy test-1 (did you mean 'payment_status'?)"] == (
        unknown.dead_letters
    )
    (rejected,) = proc.on_tick(T0 + 3 * SECOND).decisions  # the defaults' settle: 2s
    assert "rejected" == rejected.record["outcome"]
    alone = proc.on_claim(step_claim("r1", "rogue"))
    assert "unregistered_only" in alone.events
    assert ("resolved", "degrade") == (
        alone.decisions[0].record["outcome"],
        alone.decisions[0].record["action"],
    )
    backed = proc.on_claim(step_claim("r2", "ledger-a"))
    assert "unregistered_only" not in backed.events
    assert "proceed" == backed.decisions[0].record["action"]
