"""Fact keys made once: a claim's and a state's key are the fact's, after any change too."""

from __future__ import annotations

from dataclasses import replace

import pytest
from claimwatch.core.claim import fact_key
from claimwatch.core.state import FactState

from tests.support.claims import claim


@pytest.mark.parametrize(
    ("subject", "field"),
    [("invoice:INV-1", "payment_status"), ("acct:ü", "balance"), ("a", "b")],
)
def test_a_claim_and_its_state_name_their_fact(subject: str, field: str) -> None:
    """Built, copied with a change, or restored: the key is fact_key(subject, field)."""
    made = claim("c1", "ledger-a", "paid", subject=subject, field=field)
    changed = replace(made, arrival_error="ahead of the partition clock")
    other = replace(made, subject=subject + "-2")
    state = FactState(subject, field, 0, claims=[made])
    restored = FactState.from_obj(state.to_obj())
    expected = fact_key(subject, field)
    assert [expected] * 4 == [made.fact_key, changed.fact_key, state.key, restored.key]
    assert fact_key(subject + "-2", field) == other.fact_key
