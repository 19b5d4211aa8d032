"""The nine disagreement fixtures of the source essay, plus the rules of docs/concepts.md#decide."""

from __future__ import annotations

from typing import Any

from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.resolve import resolve
from claimwatch.models.policy import Authority, OnConflict

from tests.support.claims import claim


def dispositions(record: dict[str, Any]) -> dict[str, str]:
    """claim_id -> disposition of a decision record."""
    return {c["claim_id"]: c["disposition"] for c in record["claims"]}


def test_single_fresh_claim_resolves(policy: CompiledPolicy, now_us: int) -> None:
    """1. A single fresh claim resolves to its value."""
    record = resolve([claim("a", "billing-api", "paid")], policy, now_us)
    assert ("resolved", "paid", 1) == (record["outcome"], record["value"], record["corroboration"])
    assert {"a": "won"} == dispositions(record)
    assert "proceed" == record["action"]


def test_single_stale_claim_is_insufficient(policy: CompiledPolicy, now_us: int) -> None:
    """2. A single stale claim is insufficient, never the least-stale guess."""
    old = claim("a", "billing-api", "paid", observed_at="2026-09-14T09:10:00Z")
    record = resolve([old], policy, now_us)
    assert ("insufficient", None, 0) == (
        record["outcome"],
        record["value"],
        record["corroboration"],
    )
    assert {"a": "stale"} == dispositions(record)
    assert "escalate" == record["action"]  # payment_status is consequential
    assert "exceeded the freshness budget" in record["reason"]


def test_higher_authority_wins(policy: CompiledPolicy, now_us: int) -> None:
    """3. Two fresh claims of different classes: the higher class wins, the other dissents."""
    claims = [
        claim("a", "billing-api", "paid"),
        claim("b", "reporting-replica@eu-west-1", "overdue", observed_at="2026-09-14T09:11:58Z"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", "paid", 1) == (record["outcome"], record["value"], record["corroboration"])
    assert {"a": "won", "b": "outranked"} == dispositions(record)
    loser = next(c for c in record["claims"] if c["claim_id"] == "b")
    assert (True, True) == (loser["dissent"], loser["temporal"])


def test_same_class_different_values_conflict(policy: CompiledPolicy, now_us: int) -> None:
    """4. Two claims of the same class with different values are a value conflict."""
    claims = [
        claim("a", "billing-api@us", "paid", lineage="ledger-us"),
        claim("b", "billing-api@eu", "unpaid", lineage="ledger-eu"),
        claim("c", "reporting-replica", "paid"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("conflict", "value", None) == (
        record["outcome"],
        record["conflict_kind"],
        record["value"],
    )
    assert {"a": "contradicting", "b": "contradicting", "c": "outranked"} == dispositions(record)
    assert {"paid", "unpaid"} == {a["value"] for a in record["alternatives"]}
    assert "escalate" == record["action"]


def test_same_value_different_sources_corroborate(policy: CompiledPolicy, now_us: int) -> None:
    """5. Same class, same value, independent sources: resolved with corroboration 2."""
    claims = [
        claim("a", "scorer", 0.42, field="risk_score", subject="customer:1"),
        claim(
            "b",
            "scorer@b",
            0.425,
            field="risk_score",
            subject="customer:1",
            lineage="scorer-b",
            observed_at="2026-09-14T09:11:00Z",
        ),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", 0.42, 2) == (record["outcome"], record["value"], record["corroboration"])
    assert {"a": "won", "b": "corroborating"} == dispositions(record)


def test_same_lineage_agreement_counts_once(policy: CompiledPolicy, now_us: int) -> None:
    """6. Claims that share a lineage and agree are one vote."""
    claims = [
        claim("a", "billing-api", "paid"),
        claim("b", "ledger-replica", "paid", observed_at="2026-09-14T09:12:05Z"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", 1) == (record["outcome"], record["corroboration"])
    assert {"a": "won", "b": "same_lineage"} == dispositions(record)


def test_missing_timestamp_is_rejected(policy: CompiledPolicy, now_us: int) -> None:
    """7. A claim without observed_at is rejected at the contract boundary and does not vote."""
    claims = [
        claim("a", "billing-api", "paid", observed_at=None),
        claim("b", "reporting-replica", "overdue"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", "overdue") == (record["outcome"], record["value"])
    assert {"a": "rejected", "b": "won"} == dispositions(record)
    rejected = next(c for c in record["claims"] if c["claim_id"] == "a")
    assert "observed_at" in rejected["error"]
    alone = resolve([claims[0]], policy, now_us)
    assert "rejected" == alone["outcome"]


def test_unit_mismatch_is_rejected_not_arbitrated(policy: CompiledPolicy, now_us: int) -> None:
    """8. A value in another currency is rejected by normalization, not arbitrated."""
    claims = [
        claim(
            "a",
            "billing-api",
            {"amount": 1250, "currency": "USD", "minor_units": True},
            field="balance",
        ),
        claim(
            "b",
            "billing-api@eu",
            {"amount": 11.5, "currency": "EUR"},
            field="balance",
            lineage="ledger-eu",
        ),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", {"minor": 1250, "currency": "USD"}) == (
        record["outcome"],
        record["canonical"],
    )
    assert {"a": "won", "b": "rejected"} == dispositions(record)
    rejected = next(c for c in record["claims"] if c["claim_id"] == "b")
    assert "EUR" in rejected["error"]


def test_tool_error_is_not_an_empty_result(policy: CompiledPolicy, now_us: int) -> None:
    """9. A tool error is no evidence (not an empty value), and `ok` without a value is rejected."""
    failed = claim("a", "billing-api", status="error")
    record = resolve([failed], policy, now_us)
    assert ("insufficient", {"a": "no_evidence"}) == (record["outcome"], dispositions(record))
    empty = claim("b", "billing-api")
    record = resolve([empty], policy, now_us)
    assert "rejected" == record["outcome"]
    assert "without a `value`" in record["claims"][0]["error"]


def test_existence_conflict_is_never_settled(policy: CompiledPolicy, now_us: int) -> None:
    """A found value meeting not_found at the top class stays a conflict, whatever on_conflict."""
    claims = [
        claim("a", "crm-1", "1 Main St", field="shipping_address"),
        claim("b", "crm-2", status="not_found", field="shipping_address"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("conflict", "existence") == (record["outcome"], record["conflict_kind"])


def test_resolved_absence(policy: CompiledPolicy, now_us: int) -> None:
    """not_found from the owner is evidence of absence: resolved, exists false, null value."""
    record = resolve([claim("a", "billing-api", status="not_found")], policy, now_us)
    assert ("resolved", False, None) == (record["outcome"], record["exists"], record["value"])


def test_cache_never_displaces_its_owner(policy: CompiledPolicy, now_us: int) -> None:
    """A newer claim from the owner's own cache does not replace the owner's claim."""
    claims = [
        claim("a", "billing-api", "paid", observed_at="2026-09-14T09:12:00Z"),
        claim("b", "ledger-replica", "unpaid", observed_at="2026-09-14T09:12:20Z"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", "paid") == (record["outcome"], record["value"])
    loser = next(c for c in record["claims"] if c["claim_id"] == "b")
    assert ("outranked", True, False) == (loser["disposition"], loser["dissent"], loser["temporal"])


def test_prefer_recent_settles_a_value_conflict(policy: CompiledPolicy, now_us: int) -> None:
    """prefer_recent: the newest of the strongest wins and the reason says so."""
    claims = [
        claim(
            "a", "crm-1", "1 Main St", field="shipping_address", observed_at="2026-09-10T00:00:00Z"
        ),
        claim("b", "crm-2", "9 Old Rd", field="shipping_address"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", "9 Old Rd") == (record["outcome"], record["value"])
    assert "prefer_recent" in record["reason"]


def test_prefer_primary_needs_the_owner(policy: CompiledPolicy, now_us: int) -> None:
    """prefer_primary: the owner wins when among the strongest; without it, as block."""
    spec = policy.policy.model_copy(deep=True)
    field = spec.fields["payment_status"].model_copy(
        update={
            "on_conflict": OnConflict.PREFER_PRIMARY,
            "authority": {"mirror": Authority.SYSTEM_OF_RECORD},
        }
    )
    spec = spec.model_copy(update={"fields": {**spec.fields, "payment_status": field}})
    primary = CompiledPolicy(spec)
    claims = [
        claim("a", "billing-api", "paid", lineage="ledger-us"),
        claim("b", "mirror", "unpaid", observed_at="2026-09-14T09:12:10Z"),
    ]
    record = resolve(claims, primary, now_us)
    assert ("resolved", "paid") == (record["outcome"], record["value"])
    assert {"a": "won", "b": "outranked"} == dispositions(record)
    others = [
        claim("c", "mirror", "paid", lineage="r1"),
        claim("d", "mirror@2", "unpaid", lineage="r2"),
    ]
    assert "conflict" == resolve(others, primary, now_us)["outcome"]


def test_present_with_timestamp_lists_alternatives(policy: CompiledPolicy, now_us: int) -> None:
    """present_with_timestamp: resolved to the newest with every competing value listed."""
    claims = [
        claim("a", "scorer", 0.42, field="risk_score", observed_at="2026-09-14T06:00:00Z"),
        claim("b", "scorer@2", 0.47, field="risk_score", lineage="scorer-2"),
    ]
    record = resolve(claims, policy, now_us)
    assert ("resolved", 0.47) == (record["outcome"], record["value"])
    assert [("b", 0.47), ("a", 0.42)] == [
        (a["claim_id"], a["value"]) for a in record["alternatives"]
    ]


def test_assertion_never_proceeds(policy: CompiledPolicy, now_us: int) -> None:
    """A fact won by a user's assertion escalates (consequential) instead of proceeding."""
    record = resolve([claim("a", "user", "paid")], policy, now_us)
    assert ("resolved", "escalate") == (record["outcome"], record["action"])


def test_claim_from_the_future_is_rejected(policy: CompiledPolicy, now_us: int) -> None:
    """A claim observed more than clock_skew ahead of now is rejected."""
    record = resolve(
        [claim("a", "billing-api", "paid", observed_at="2026-09-14T09:13:00Z")],
        policy,
        now_us,
    )
    assert "rejected" == record["outcome"]
    assert "future" in record["claims"][0]["error"]


def test_contract_version_mismatch_is_rejected(policy: CompiledPolicy, now_us: int) -> None:
    """A claim whose contract_version differs from the field's is a schema conflict."""
    spec = policy.policy
    field = spec.fields["balance"].model_copy(update={"contract_version": "2"})
    versioned = CompiledPolicy(
        spec.model_copy(update={"fields": {**spec.fields, "balance": field}})
    )
    versioned_claim = claim(
        "a",
        "billing-api",
        {"amount": 1, "currency": "USD", "minor_units": True},
        field="balance",
        contract_version="1",
    )
    record = resolve([versioned_claim], versioned, now_us)
    assert "rejected" == record["outcome"]
    assert "contract_version" in record["claims"][0]["error"]


def test_producer_cannot_promote_itself(policy: CompiledPolicy, now_us: int) -> None:
    """The envelope's authority label is informational: the registry decides the class."""
    claims = [
        claim("a", "billing-api", "paid"),
        claim("b", "reporting-replica", "overdue", authority="system_of_record"),
    ]
    record = resolve(claims, policy, now_us)
    assert "paid" == record["value"]
    loser = next(c for c in record["claims"] if c["claim_id"] == "b")
    assert ("derived", "system_of_record") == (loser["authority"], loser["claimed_authority"])
