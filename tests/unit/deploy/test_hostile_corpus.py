"""The hostile corpus through the claims handling: nothing raises, each record as expected."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.feed import Outcome, feed, hostile_runtime
from tests.support.hostile import (
    EXPECTS,
    KINDS,
    LATENESS_US,
    T0,
    HostileMessage,
    hostile_corpus,
    valid_claims,
)
from tests.support.hostile_kinds import encode

SEED = 20260914
CORPUS = hostile_corpus(SEED, len(KINDS))
OUTCOMES: dict[str, list[Outcome]] = {}


def outcomes_of(kind: str) -> list[Outcome]:
    """The outcomes of one kind, the whole corpus fed once through one runtime."""
    if not OUTCOMES:
        for outcome in feed(hostile_runtime(), CORPUS):
            OUTCOMES.setdefault(outcome.message.kind, []).append(outcome)
    return OUTCOMES[kind]


def test_corpus_has_forty_kinds_and_every_expectation() -> None:
    """At least 40 kinds, each once in a corpus of len(KINDS), and all four expectations."""
    kinds = Counter(m.kind for m in CORPUS if m.kind in KINDS)
    assert (True, set(KINDS)) == (len(KINDS) >= 40, set(kinds))
    assert set(EXPECTS) == {m.expect for m in CORPUS}


def test_corpus_is_deterministic_for_a_seed() -> None:
    """The same seed gives the same records; another seed another order."""
    assert CORPUS == hostile_corpus(SEED, len(KINDS))
    assert [m.kind for m in CORPUS] != [m.kind for m in hostile_corpus(SEED + 1, len(KINDS))]


@pytest.mark.parametrize("kind", sorted({m.kind for m in CORPUS}))
def test_every_hostile_record_is_handled_as_expected(kind: str) -> None:
    """Decided, dead-lettered, or ignored (a redelivery, a bad tick): docs/concepts.md#bad-input."""
    problems = [(o.message.expect, o.problem()) for o in outcomes_of(kind) if o.problem()]
    assert [] == problems


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), repeat=st.integers(1, 3))
def test_hostile_records_in_any_order_never_raise(seed: int, repeat: int) -> None:
    """Any seed and length: every record handled without an exception, none silently skipped."""
    outcomes = feed(hostile_runtime(), hostile_corpus(seed, repeat * len(KINDS)))
    unhandled = [
        (o.message.kind, o.error or o.events)
        for o in outcomes
        if o.error is not None
        or not (o.decisions or o.dead_letters or {"duplicate", "bad_tick"} & set(o.events))
    ]
    assert [] == unhandled


def test_valid_claims_are_all_decided_and_none_dead_lettered() -> None:
    """The ordinary claims of the corpus policy: each decided, no DLQ record."""
    claims = valid_claims(SEED, 200)
    messages = [
        replace(
            HostileMessage("valid", f"{c['subject']}|{c['field']}".encode(), encode(c)),
            claim_id=c["claim_id"],
            timestamp_us=T0 + n * 1000 + LATENESS_US,
        )
        for n, c in enumerate(claims)
    ]
    outcomes = feed(hostile_runtime(), messages)
    assert [] == [(o.message.claim_id, o.problem()) for o in outcomes if o.problem()]
    assert [] == [o.dead_letters for o in outcomes if o.dead_letters]
