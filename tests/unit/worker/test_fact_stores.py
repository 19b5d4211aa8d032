"""The claims edge's fact table: what it writes is the state's stored form, claims made once."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest
from claimwatch.core.claim import Claim
from claimwatch.core.state import FactState
from claimwatch.worker.claims.facts import TableFacts, stored_form

from tests.support.claims import claim

KEY = "invoice:INV-1|payment_status"


def _state(*claim_ids: str, **extra: Any) -> FactState:
    state = FactState("invoice:INV-1", "payment_status", 2)
    state.claims = [claim(cid, "billing-api", "paid", **extra) for cid in claim_ids]
    return state


@pytest.mark.parametrize(
    "extra",
    [{}, {"trace_id": "t-1", "lineage": "ledger"}, {"observed_at": "2026-09-14T11:12:00+02:00"}],
    ids=["plain", "optional-keys", "offset-time"],
)
def test_a_flushed_fact_is_the_bytes_of_its_stored_form(extra: dict[str, Any]) -> None:
    """The table holds exactly `orjson.dumps(state.to_obj())`: the same bytes as before."""
    table: dict[bytes, bytes] = {}
    facts = TableFacts(table)
    state = _state("c-1", "c-2", **extra)
    facts[KEY] = state
    facts.flush()
    assert orjson.dumps(state.to_obj()) == table[KEY.encode()]


def test_a_claim_is_serialized_once_however_often_its_fact_is_written() -> None:
    """The second write of a fact reuses each kept claim's serialized form."""
    table: dict[bytes, bytes] = {}
    facts = TableFacts(table)
    state = _state("c-1")
    facts[KEY] = state
    facts.flush()
    first = _stored(state.claims[0])
    state.claims.append(claim("c-2", "reporting-replica", "overdue"))
    facts[KEY] = state
    facts.flush()
    assert (True, orjson.dumps(state.to_obj())) == (
        _stored(state.claims[0]) is first,
        table[KEY.encode()],
    )


def test_a_restored_fact_decodes_to_the_same_state() -> None:
    """What the table holds reads back as the state that was written."""
    table: dict[bytes, bytes] = {}
    writer = TableFacts(table)
    state = _state("c-1", "c-2")
    writer[KEY] = state
    writer.flush()
    restored = TableFacts(table)[KEY]
    assert state.to_obj() == restored.to_obj()


def test_the_stored_form_embeds_as_the_packed_claim() -> None:
    """A claim's stored form serializes to the JSON of its packed form."""
    one = claim("c-1", "billing-api", "paid")
    assert None is one.memo
    assert orjson.dumps(_state("c-1").to_obj()["c"]) == orjson.dumps([stored_form(one)])


def test_a_stored_form_holds_about_its_own_size() -> None:
    """A kept stored form holds its bytes, not the 4 KiB buffer orjson wrote them into."""
    made = [claim(f"c-{n}", "billing-api", "paid") for n in range(500)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        forms = [stored_form(c) for c in made]  # (each with the memo that keeps it)
        held = (tracemalloc.get_traced_memory()[0] - before) / len(forms)
    finally:
        tracemalloc.stop()
    size = len(orjson.dumps(forms[0]))
    assert held < 4 * size, f"{held:.0f} bytes held per stored form of {size} bytes"


def _stored(one: Claim) -> object:
    assert one.memo is not None
    return one.memo.stored
