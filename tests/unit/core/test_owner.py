"""A field's owner: a source is it by its exact id or by its service part (before `@`)."""

from __future__ import annotations

import pytest
from claimwatch.core.policy import FieldRule, is_owner

from tests.support.policies import policy_with


def rule(owner: str | None) -> FieldRule:
    """The test policy's `payment_status` rule, owned by `owner` (None: no owner)."""
    return policy_with(**({"owner": owner} if owner is not None else {})).rule("payment_status")


@pytest.mark.parametrize(
    ("owner", "source", "expected"),
    [
        ("ledger-a", "ledger-a", True),
        ("ledger-a", "ledger-a@eu-west-1", True),
        ("ledger-a", "ledger-a@eu@west", True),
        ("ledger-a", "ledger-b", False),
        ("ledger-a", "ledger-b@ledger-a", False),
        ("ledger-a", "@ledger-a", False),
        ("ledger-a", "ledger-ab", False),
        ("ledger-a@eu", "ledger-a@eu", True),
        ("ledger-a@eu", "ledger-a", False),
        ("ledger-a@eu", "ledger-a@eu@w", False),
        (None, "ledger-a", False),
    ],
)
def test_a_source_is_the_owner_by_its_id_or_service_part(
    owner: str | None, source: str, expected: bool
) -> None:
    """Exact id or the part before the first `@`; a field without an owner has none."""
    assert expected == is_owner(rule(owner), source)
