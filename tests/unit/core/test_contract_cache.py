"""The contract check kept on a claim: a fresh check's verdicts, the clock still judged."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from streams.core.claim import Claim, fact_key
from streams.core.contract import Verdict, check
from streams.core.timeutil import parse_rfc3339
from tests.support.claims import OBSERVED_AT, claim
from tests.support.policies import policy_with

AT = parse_rfc3339(OBSERVED_AT)


def _fresh(made: Claim) -> Claim:
    """The same claim with nothing kept from an earlier check."""
    return replace(made)


@pytest.mark.parametrize(
    ("value", "changes", "kind"),
    [
        ("paid", {}, "evidence"),
        ("owed", {}, "error"),  # not one of the enum's values
        (None, {"status": "not_found"}, "evidence"),
        (None, {"status": "unavailable"}, "no evidence"),
        (None, {}, "error"),  # ok without a value
        ("paid", {"contract_version": "v9"}, "error"),
    ],
)
def test_a_kept_verdict_equals_a_fresh_check(
    value: Any, changes: dict[str, Any], kind: str
) -> None:
    """Checked twice against one rule: the second answer is the first, and a fresh one's."""
    rule = policy_with(contract_version="v1").rule("payment_status")
    made = claim("c1", "ledger-a", value, **changes)
    first = check(made, rule, AT)
    again = check(made, rule, AT + 1_000_000)
    expected = check(_fresh(made), rule, AT)
    assert (expected, expected) == (first, again)
    found = "error" if first.error else "evidence" if first.evidence else "no evidence"
    assert kind == found


def test_the_clock_is_judged_at_every_check() -> None:
    """A kept verdict does not hide a claim that is too far ahead of a later check's clock."""
    rule = policy_with().rule("payment_status")
    made = claim("c1", "ledger-a", "paid")
    assert check(made, rule, AT).evidence
    early = AT - rule.clock_skew_us - 1
    late = check(made, rule, early)
    assert (False, True) == (late.evidence, "in the future" in (late.error or ""))


def test_another_rule_object_is_checked_anew() -> None:
    """A claim checked under one policy is checked again under another (replay, reload)."""
    made = claim("c1", "ledger-a", "paid")
    loose = policy_with().rule("payment_status")
    strict = policy_with(values=["unpaid"]).rule("payment_status")
    assert check(made, loose, AT).evidence
    assert Verdict(error=check(made, strict, AT).error) == check(made, strict, AT)
    assert check(made, strict, AT).error is not None


def test_replace_keeps_the_fact_key_and_drops_the_kept_check() -> None:
    """A changed copy (an arrival error) names the same fact and is checked by its own fields."""
    rule = policy_with().rule("payment_status")
    made = claim("c1", "ledger-a", "paid")
    check(made, rule, AT)
    refused = replace(made, arrival_error="ahead of the partition clock")
    assert (fact_key(made.subject, made.field), None) == (refused.fact_key, refused.checked)
    assert "ahead of the partition clock" == check(refused, rule, AT).error
