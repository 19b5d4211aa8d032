"""Generated input over the pure path: envelope decode, contract, resolve, record encode.

For any bytes, any JSON envelope (any value in every field type, any string, any clock),
decoding either gives a claim or refuses it with a reason (DecodeError); a claim is always
decided (every claim of a fact is listed in its decision with a disposition, a rejected one
with its error) and the decision always encodes. Failures found are kept as `@example`s.
"""

from __future__ import annotations

from typing import Any, Final, get_args

import pytest
from claimwatch.core.claim import EARLIEST_OBSERVED_US, LATEST_OBSERVED_US, Claim
from claimwatch.core.resolve import resolve
from claimwatch.models.decision import Disposition, Outcome
from claimwatch.wire.codec import DecodeError, claim_of, decode_claim, dumps, loads
from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.generators import (
    FIELD_TYPES,
    FIELDS,
    FUZZ,
    T0_US,
    envelope_bytes,
    envelopes,
    fuzz_policy,
    huge_runs,
    json_values,
    nested,
    values_for,
)

POLICY = fuzz_policy()
DISPOSITIONS: Final = frozenset(get_args(Disposition))
OUTCOMES: Final = frozenset(get_args(Outcome))
#: The passage of issue 40 item 1: a number of more than 4,300 digits in a text field.
HUGE_NUMBER_PASSAGE: Final = "total " + "1," * 4400

#: Clock times a decision may be made at: near the streams' start, or anywhere on the calendar.
clocks = st.one_of(
    st.integers(T0_US - 10**9, T0_US + 10**9),
    st.integers(EARLIEST_OBSERVED_US, LATEST_OBSERVED_US),
)


def _envelope(
    field: str, value: Any, claim_id: str = "c1", source: str = "ledger"
) -> dict[str, Any]:
    """An ok claim of `field` on inv:1, observed at a fixed time."""
    return {
        "claim_id": claim_id,
        "subject": "inv:1",
        "field": field,
        "source": source,
        "observed_at": "2026-09-14T09:12:30Z",
        "status": "ok",
        "value": value,
    }


def _claim(envelope: dict[str, Any]) -> Claim | None:
    """The claim the wire makes of an envelope (by its bytes, else as parsed), or None."""
    raw = envelope_bytes(envelope)
    try:
        return decode_claim(raw) if raw is not None else claim_of(envelope)
    except DecodeError as exc:
        assert str(exc), "a refusal names its reason"
        return None


def _decided(claims: list[Claim], now_us: int) -> dict[str, Any]:
    """The decision of one fact's claims, checked: it encodes and lists every claim."""
    record = resolve(claims, POLICY, now_us)
    assert record == loads(dumps(record))
    assert record["outcome"] in OUTCOMES
    listed = {c["claim_id"]: c for c in record["claims"]}
    assert {c.claim_id for c in claims} == set(listed)
    for entry in listed.values():
        assert entry["disposition"] in DISPOSITIONS
        if entry["disposition"] == "rejected":
            assert isinstance(entry["error"], str) and entry["error"]
    return record


@FUZZ
@given(raw=st.binary(max_size=512) | st.text(max_size=256).map(str.encode))
@example(raw=b"")
@example(raw=b"null")
@example(raw=b"[" * 2000 + b"]" * 2000)
@example(raw=b'{"claim_id":"a","subject":"s","field":"f","source":"x","value":1e999}')
@example(
    raw=b'{"claim_id":"a","subject":"s","field":"f","source":"x","value":' + b"9" * 5000 + b"}"
)
def test_any_bytes_are_a_claim_or_refused_with_a_reason(raw: bytes) -> None:
    """decode_claim of any bytes gives a Claim or raises DecodeError with a reason."""
    try:
        claim = decode_claim(raw)
    except DecodeError as exc:
        assert str(exc)
        return
    _decided([claim], T0_US)


@FUZZ
@given(envelope=envelopes(), now_us=clocks)
@example(
    envelope=_envelope("note", HUGE_NUMBER_PASSAGE, source="user"),
    now_us=T0_US,
)
@example(
    envelope={
        "claim_id": "c1",
        "subject": "s",
        "field": "blob",
        "source": "x",
        "value": nested(70),
    },
    now_us=T0_US,
)
@example(
    envelope={
        "claim_id": "c1",
        "subject": "s",
        "field": "weight",
        "source": "ledger",
        "observed_at": "2026-09-14T09:12:30Z",
        "status": "ok",
        "value": {"value": 1, "unit": "%"},
    },
    now_us=T0_US,
)
def test_nothing_raises_on_any_envelope(envelope: dict[str, Any], now_us: int) -> None:
    """Any envelope is refused with a reason or decided; the decision lists it and encodes."""
    claim = _claim(envelope)
    if claim is not None:
        _decided([claim], now_us)


@st.composite
def one_fact(draw: st.DrawFn) -> list[Claim]:
    """The claims of one fact (distinct ids): any values, times, statuses and sources."""
    field = draw(st.sampled_from(FIELDS))
    bodies = draw(st.lists(envelopes(subject="inv:1", field=field), min_size=1, max_size=6))
    claims = []
    for n, body in enumerate(bodies):
        claim = _claim({**body, "claim_id": f"c{n}"})
        if claim is not None:
            claims.append(claim)
    return claims


@FUZZ
@given(claims=one_fact(), now_us=clocks)
def test_every_claim_of_a_fact_is_listed_with_a_disposition(
    claims: list[Claim], now_us: int
) -> None:
    """However its claims look, a fact is decided, and its decision lists each of them."""
    if claims:
        _decided(claims, now_us)


def _note(claim_id: str, value: Any, source: str = "user") -> Claim | None:
    # None: refused (a passage beyond the 64 KiB message limit)
    return _claim(_envelope("note", value, claim_id, source))


@FUZZ
@given(first=values_for("note"), second=values_for("note") | huge_runs())
@example(first="The invoice was paid on time.", second=HUGE_NUMBER_PASSAGE)
@example(first=HUGE_NUMBER_PASSAGE, second=HUGE_NUMBER_PASSAGE + " not")
@example(first="weighs " + "１" * 5000 + " kg", second="weighs 2 kg")
def test_any_two_passages_are_compared(first: Any, second: Any) -> None:
    """Two passages of a text field, whatever their numbers and scripts, are decided."""
    claims = [c for c in (_note("a", first), _note("b", second, "index")) if c is not None]
    if claims:
        _decided(claims, T0_US)


@FUZZ
@given(value=json_values(), field=st.sampled_from(FIELDS))
def test_any_value_of_any_field_type_is_decided(value: Any, field: str) -> None:
    """Any JSON value on a field of any type: decided or rejected with a reason, encoded."""
    claim = _claim(_envelope(field, value))
    if claim is not None:
        _decided([claim], T0_US)


@pytest.mark.parametrize("field", sorted(FIELD_TYPES))
def test_the_generators_valid_value_of_each_field_type_resolves(field: str) -> None:
    """The value the generators start from (and shrink to) keeps its field's contract."""
    claim = _claim(_envelope(field, FIELD_TYPES[field][1]))
    assert claim is not None
    assert "resolved" == _decided([claim], T0_US)["outcome"]
