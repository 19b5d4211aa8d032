"""A decision's claim records: envelope keys in the record order, the extra ones sorted."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.decision import claim_record
from claimwatch.core.entry import ClaimEntry
from claimwatch.models.policy import Authority

from tests.support.claims import claim


def _keys(**extra: Any) -> list[str]:
    entry = ClaimEntry(
        claim("c-1", "billing-api", "paid", **extra), Authority.SYSTEM_OF_RECORD, 3, "l", True
    )
    entry.disposition = "won"
    return list(claim_record(entry))


TAIL = ["authority", "lineage", "disposition"]
HEAD = ["claim_id", "subject", "field", "source", "observed_at", "status", "value"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, [*HEAD, *TAIL]),
        ({"trace_id": "t", "tool": "x"}, [*HEAD, "tool", "trace_id", *TAIL]),
        ({"zeta": 1, "alpha": 2}, [*HEAD, "alpha", "zeta", *TAIL]),
        ({"authority": "system_of_record"}, [*HEAD, "claimed_authority", *TAIL]),
        (
            {"zeta": 1, "authority": "cached", "agent_id": "a"},
            [*HEAD, "agent_id", "zeta", "claimed_authority", *TAIL],
        ),
    ],
    ids=["usual", "optional", "extra-sorted", "claimed-authority", "all"],
)
def test_record_keys_keep_their_order(extra: dict[str, Any], expected: list[str]) -> None:
    """Usual keys in order, others sorted, `authority` shown as `claimed_authority`."""
    assert expected == _keys(**extra)


def test_the_same_keys_sent_in_another_order_give_the_same_record_order() -> None:
    """An envelope's key order as sent never changes the record's (kept per key set)."""
    first = claim("c-1", "billing-api", "paid", zeta=1, trace_id="t")
    shuffled = dict(reversed(list(first.envelope.items())))
    entry = ClaimEntry(first, Authority.SYSTEM_OF_RECORD, 3, "l", True)
    again = ClaimEntry(
        claim("c-1", "billing-api", "paid", zeta=1, trace_id="t"),
        Authority.SYSTEM_OF_RECORD,
        3,
        "l",
        True,
    )
    again.claim.envelope = shuffled
    assert list(claim_record(entry)) == list(claim_record(again))
