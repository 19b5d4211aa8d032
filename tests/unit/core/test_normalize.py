"""Normalization per field type: canonical values, rejections and agreement."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from claimwatch.core.normalize import (
    ABSENT,
    NormalizationError,
    canonical,
    normalizer_for,
)
from claimwatch.models.policy import FieldPolicy
from claimwatch.units import UnitError, check_unit, convert_uncached, converter
from hypothesis import given, settings
from hypothesis import strategies as st

STATUSES = ["paid", "unpaid", "overdue", "refunded"]


def field(**spec: Any) -> FieldPolicy:
    return FieldPolicy.model_validate(spec)


def canon(spec: dict[str, Any], value: object) -> Hashable:
    return canonical(field(**spec), value)


# --------------------------------------------------------------------------- accepted values

ACCEPTED: list[tuple[str, dict[str, Any], object, Hashable]] = [
    # enum
    ("enum-allowed", {"type": "enum", "values": STATUSES}, "paid", "paid"),
    ("enum-stripped", {"type": "enum", "values": STATUSES}, "  overdue\n", "overdue"),
    ("enum-nfkc", {"type": "enum", "values": STATUSES}, "ｐａｉｄ", "paid"),
    (
        "enum-fold-returns-policy-spelling",
        {"type": "enum", "values": ["Paid", "Unpaid"], "case": "fold"},
        "PAID",
        "Paid",
    ),
    # string / text
    ("string-trim-default", {"type": "string"}, "  Main St 1 ", "Main St 1"),
    ("string-nfkc-full-width", {"type": "string"}, "ＡＢＣ", "ABC"),
    (
        "string-preserve-whitespace",
        {"type": "string", "whitespace": "preserve"},
        " a  b ",
        " a  b ",
    ),
    ("string-collapse", {"type": "string", "whitespace": "collapse"}, " a \t\n b\u3000c ", "a b c"),
    ("string-fold", {"type": "string", "case": "fold"}, "Straße", "strasse"),
    ("string-preserve-case", {"type": "string"}, "Straße", "Straße"),
    (
        "string-collapse-and-fold",
        {"type": "string", "case": "fold", "whitespace": "collapse"},
        "  1 MAIN   Street ",
        "1 main street",
    ),
    ("text-like-string", {"type": "text"}, " ＡＢＣ ", "ABC"),
    # bool
    ("bool-true", {"type": "bool"}, True, True),
    ("bool-false", {"type": "bool"}, False, False),
    ("bool-string-any-case", {"type": "bool"}, "TRUE", True),
    ("bool-string-false", {"type": "bool"}, "False", False),
    # integer
    ("integer-int", {"type": "integer"}, 12, 12),
    ("integer-integral-float", {"type": "integer"}, 12.0, 12),
    ("integer-string", {"type": "integer"}, "12", 12),
    ("integer-decimal-string", {"type": "integer"}, "12.0", 12),
    ("integer-negative", {"type": "integer"}, -3, -3),
    # number
    ("number-int", {"type": "number"}, 3, 3.0),
    ("number-float", {"type": "number"}, 0.25, 0.25),
    ("number-string", {"type": "number"}, " 1e3 ", 1000.0),
    ("number-negative-zero", {"type": "number"}, -0.0, 0.0),
    ("number-decimal", {"type": "number"}, Decimal("2.5"), 2.5),
    # money
    (
        "money-usd-major-units",
        {"type": "money", "currency": "USD"},
        {"amount": "12.50", "currency": "USD"},
        (1250, "USD"),
    ),
    (
        "money-usd-minor-units",
        {"type": "money", "currency": "USD"},
        {"amount": 1250, "currency": "USD", "minor_units": True},
        (1250, "USD"),
    ),
    (
        "money-usd-float-amount",
        {"type": "money", "currency": "USD"},
        {"amount": 12.5, "currency": "USD", "minor_units": False},
        (1250, "USD"),
    ),
    (
        "money-jpy-zero-decimals",
        {"type": "money", "currency": "JPY"},
        {"amount": 1250, "currency": "JPY"},
        (1250, "JPY"),
    ),
    (
        "money-jpy-minor-units",
        {"type": "money", "currency": "JPY"},
        {"amount": 1250, "currency": "JPY", "minor_units": True},
        (1250, "JPY"),
    ),
    (
        "money-kwd-three-decimals",
        {"type": "money", "currency": "KWD"},
        {"amount": "1.234", "currency": "KWD"},
        (1234, "KWD"),
    ),
    (
        "money-kwd-minor-units",
        {"type": "money", "currency": "KWD"},
        {"amount": 1234, "currency": "KWD", "minor_units": True},
        (1234, "KWD"),
    ),
    (
        "money-negative-refund",
        {"type": "money", "currency": "EUR"},
        {"amount": "-0.10", "currency": "EUR"},
        (-10, "EUR"),
    ),
    # quantity
    (
        "quantity-g-to-kg",
        {"type": "quantity", "unit": "kg"},
        {"value": 1500, "unit": "g"},
        1.5,
    ),
    (
        "quantity-same-unit",
        {"type": "quantity", "unit": "kg"},
        {"value": 3.5, "unit": "kg"},
        3.5,
    ),
    (
        "quantity-h-to-min",
        {"type": "quantity", "unit": "min"},
        {"value": 2, "unit": "h"},
        120.0,
    ),
    (
        "quantity-affine-degC-to-degF",
        {"type": "quantity", "unit": "degF"},
        {"value": 100, "unit": "degC"},
        212.0,
    ),
    # timestamp
    ("timestamp-z", {"type": "timestamp"}, "2026-09-14T09:12:03Z", 1_789_377_123_000_000),
    (
        "timestamp-plus-two-hours",
        {"type": "timestamp"},
        "2026-09-14T11:12:03+02:00",
        1_789_377_123_000_000,
    ),
    (
        "timestamp-negative-offset",
        {"type": "timestamp"},
        "2026-09-14T04:12:03-05:00",
        1_789_377_123_000_000,
    ),
    (
        "timestamp-fraction",
        {"type": "timestamp"},
        "2026-09-14T09:12:03.25Z",
        1_789_377_123_250_000,
    ),
    (
        "timestamp-aware-datetime",
        {"type": "timestamp"},
        datetime(2026, 9, 14, 9, 12, 3, tzinfo=UTC),
        1_789_377_123_000_000,
    ),
    # json
    ("json-sorted-keys", {"type": "json"}, {"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
    ("json-unicode-kept", {"type": "json"}, {"k": "é"}, '{"k":"é"}'),
    ("json-integral-float", {"type": "json"}, {"n": 1.0}, '{"n":1}'),
    ("json-scalar", {"type": "json"}, "x", '"x"'),
    # null
    ("nullable-null", {"type": "number", "nullable": True}, None, None),
]


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [case[1:] for case in ACCEPTED],
    ids=[case[0] for case in ACCEPTED],
)
def test_accepted_values_normalize(spec: dict[str, Any], value: object, expected: Hashable) -> None:
    """A valid value normalizes to its canonical form."""
    actual = canon(spec, value)
    assert expected == actual
    assert type(expected) is type(actual)


# --------------------------------------------------------------------------- rejected values

REJECTED: list[tuple[str, dict[str, Any], object, str]] = [
    (
        "enum-not-allowed",
        {"type": "enum", "values": STATUSES},
        "payed",
        "'payed' is not one of the allowed values: paid, unpaid, overdue, refunded",
    ),
    (
        "enum-case-without-fold",
        {"type": "enum", "values": STATUSES},
        "PAID",
        "'PAID' is not one of the allowed values",
    ),
    ("enum-not-string", {"type": "enum", "values": STATUSES}, 1, "got number 1"),
    ("string-number", {"type": "string"}, 12, "expected a string, got number 12"),
    ("string-object", {"type": "string"}, {"a": 1}, "expected a string, got object"),
    ("bool-yes", {"type": "bool"}, "yes", "expected true or false, got string 'yes'"),
    ("bool-one", {"type": "bool"}, 1, "expected true or false, got number 1"),
    ("integer-fraction", {"type": "integer"}, 12.5, "expected a whole number, got number 12.5"),
    ("integer-fraction-string", {"type": "integer"}, "12.5", "expected a whole number"),
    ("integer-bool", {"type": "integer"}, True, "got boolean true"),
    ("integer-huge-exponent", {"type": "integer"}, "1e999999", "below 1e308"),
    ("number-nan", {"type": "number"}, float("nan"), "finite"),
    ("number-inf-string", {"type": "number"}, "inf", "expected a number, got string 'inf'"),
    ("number-bool", {"type": "number"}, False, "expected a number, got boolean false"),
    ("number-word", {"type": "number"}, "twelve", "expected a number, got string 'twelve'"),
    (
        "money-bare-number",
        {"type": "money", "currency": "USD"},
        1250,
        'a money value needs an amount and a currency, e.g. {"amount": 1250, '
        '"currency": "USD", "minor_units": true}, got number 1250',
    ),
    (
        "money-bare-string",
        {"type": "money", "currency": "USD"},
        "12.50",
        "a money value needs an amount and a currency",
    ),
    (
        "money-other-currency",
        {"type": "money", "currency": "USD"},
        {"amount": 1250, "currency": "EUR", "minor_units": True},
        "currency EUR does not match the field's USD: "
        "amounts in different currencies are not comparable",
    ),
    (
        "money-lower-case-currency",
        {"type": "money", "currency": "USD"},
        {"amount": 1, "currency": "usd"},
        "upper-case ISO 4217 code USD",
    ),
    (
        "money-too-many-decimals-usd",
        {"type": "money", "currency": "USD"},
        {"amount": "12.505", "currency": "USD"},
        "12.505 has more decimals than USD allows (2)",
    ),
    (
        "money-too-many-decimals-float",
        {"type": "money", "currency": "USD"},
        {"amount": 12.505, "currency": "USD"},
        "12.505 has more decimals than USD allows (2)",
    ),
    (
        "money-jpy-has-no-decimals",
        {"type": "money", "currency": "JPY"},
        {"amount": "12.5", "currency": "JPY"},
        "12.5 has more decimals than JPY allows (0)",
    ),
    (
        "money-kwd-four-decimals",
        {"type": "money", "currency": "KWD"},
        {"amount": "1.2345", "currency": "KWD"},
        "1.2345 has more decimals than KWD allows (3)",
    ),
    (
        "money-minor-units-fraction",
        {"type": "money", "currency": "USD"},
        {"amount": 12.5, "currency": "USD", "minor_units": True},
        "must be a whole number of USD minor units, got 12.5",
    ),
    (
        "money-unknown-key",
        {"type": "money", "currency": "USD"},
        {"amount": 1250, "currency": "USD", "minor_unit": True},
        "unexpected key 'minor_unit'",
    ),
    (
        "money-amount-not-number",
        {"type": "money", "currency": "USD"},
        {"amount": "a lot", "currency": "USD"},
        "expected the amount as a number, got string 'a lot'",
    ),
    (
        "quantity-incompatible",
        {"type": "quantity", "unit": "m"},
        {"value": 1, "unit": "kg"},
        "cannot convert kg to m: incompatible dimensions ([mass] vs [length])",
    ),
    (
        "quantity-unknown-unit",
        {"type": "quantity", "unit": "kg"},
        {"value": 1, "unit": "furlongz"},
        "unknown unit 'furlongz'",
    ),
    (
        "quantity-bare-number",
        {"type": "quantity", "unit": "kg"},
        3.5,
        'a quantity needs a value and a unit, e.g. {"value": 3.5, "unit": "kg"}, got number 3.5',
    ),
    (
        "timestamp-naive",
        {"type": "timestamp"},
        "2026-09-14T09:12:03",
        "timestamp has no UTC offset",
    ),
    (
        "timestamp-naive-datetime",
        {"type": "timestamp"},
        datetime(2026, 9, 14, 9, 12, 3),
        "timestamp has no UTC offset",
    ),
    (
        "timestamp-garbage",
        {"type": "timestamp"},
        "yesterday",
        "expected an RFC 3339 timestamp",
    ),
    (
        "timestamp-invalid-date",
        {"type": "timestamp"},
        "2026-02-30T00:00:00Z",
        "expected a valid date and time",
    ),
    ("timestamp-number", {"type": "timestamp"}, 1_789_377_123, "got number 1789377123"),
    ("json-nan", {"type": "json"}, float("nan"), "expected a JSON value"),
    (
        "null-not-nullable",
        {"type": "string"},
        None,
        "null is not allowed for this field (set nullable: true to allow it)",
    ),
]


@pytest.mark.parametrize(
    ("spec", "value", "reason"),
    [case[1:] for case in REJECTED],
    ids=[case[0] for case in REJECTED],
)
def test_rejected_values_give_a_reason(spec: dict[str, Any], value: object, reason: str) -> None:
    """A value breaking the contract raises NormalizationError with an actionable reason."""
    with pytest.raises(NormalizationError) as caught:
        canon(spec, value)
    assert reason in str(caught.value)


# --------------------------------------------------------------------------- agreement

AGREEMENT: list[tuple[str, dict[str, Any], object, object, bool]] = [
    ("float-noise", {"type": "number"}, 0.1 + 0.2, 0.3, True),
    ("exact-default-differs", {"type": "number"}, 1.0, 1.0001, False),
    ("abs-boundary-agrees", {"type": "number", "tolerance": {"abs": 0.01}}, 0.50, 0.51, True),
    ("abs-past-boundary", {"type": "number", "tolerance": {"abs": 0.01}}, 0.50, 0.52, False),
    ("abs-boundary-strings", {"type": "number", "tolerance": {"abs": 0.01}}, "0.51", "0.5", True),
    ("rel-within", {"type": "number", "tolerance": {"rel": 0.01}}, 100, 101, True),
    ("rel-outside", {"type": "number", "tolerance": {"rel": 0.01}}, 100, 102, False),
    (
        "abs-or-rel-larger-wins",
        {"type": "number", "tolerance": {"abs": 0.5, "rel": 0.01}},
        1000,
        1009,
        True,
    ),
    (
        "quantity-2h-equals-120min",
        {"type": "quantity", "unit": "min"},
        {"value": 2, "unit": "h"},
        {"value": 120, "unit": "min"},
        True,
    ),
    (
        "quantity-g-vs-kg",
        {"type": "quantity", "unit": "kg"},
        {"value": 1500, "unit": "g"},
        {"value": 1.5, "unit": "kg"},
        True,
    ),
    (
        "quantity-tolerance",
        {"type": "quantity", "unit": "kg", "tolerance": {"abs": 0.1}},
        {"value": 1550, "unit": "g"},
        {"value": 1.5, "unit": "kg"},
        True,
    ),
    (
        "money-major-vs-minor",
        {"type": "money", "currency": "USD"},
        {"amount": "12.50", "currency": "USD"},
        {"amount": 1250, "currency": "USD", "minor_units": True},
        True,
    ),
    (
        "money-one-cent-apart",
        {"type": "money", "currency": "USD"},
        {"amount": "12.50", "currency": "USD"},
        {"amount": "12.51", "currency": "USD"},
        False,
    ),
    (
        "timestamp-offset-same-instant",
        {"type": "timestamp"},
        "2026-09-14T11:12:03+02:00",
        "2026-09-14T09:12:03Z",
        True,
    ),
    (
        "timestamp-one-second-apart",
        {"type": "timestamp"},
        "2026-09-14T09:12:04Z",
        "2026-09-14T09:12:03Z",
        False,
    ),
    ("string-nfkc", {"type": "string"}, "ＡＢＣ", "ABC", True),
    (
        "string-collapse-fold",
        {"type": "string", "case": "fold", "whitespace": "collapse"},
        " 1 Main  Street",
        "1 MAIN STREET ",
        True,
    ),
    ("string-case-preserved", {"type": "string"}, "abc", "ABC", False),
    ("enum-same", {"type": "enum", "values": STATUSES}, "paid", " paid", True),
    ("enum-different", {"type": "enum", "values": STATUSES}, "paid", "unpaid", False),
    ("bool-string-vs-json", {"type": "bool"}, "true", True, True),
    ("integer-string-vs-int", {"type": "integer"}, "12", 12, True),
    ("json-key-order", {"type": "json"}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ("null-vs-value", {"type": "number", "nullable": True}, None, 0, False),
    ("null-vs-null", {"type": "number", "nullable": True}, None, None, True),
]


@pytest.mark.parametrize(
    ("spec", "a", "b", "expected"),
    [case[1:] for case in AGREEMENT],
    ids=[case[0] for case in AGREEMENT],
)
def test_agreement(spec: dict[str, Any], a: object, b: object, expected: bool) -> None:
    """Two values agree exactly when they mean the same under the field's policy."""
    normalizer = normalizer_for(field(**spec))
    ca, cb = normalizer.canon(a), normalizer.canon(b)
    assert expected == normalizer.agree(ca, cb)
    assert expected == normalizer.agree(cb, ca)
    assert expected == normalizer.all_agree([ca, cb])


ALL_AGREE: list[tuple[str, dict[str, Any], list[object], bool]] = [
    ("empty", {"type": "number"}, [], True),
    ("single", {"type": "number"}, [1.0], True),
    ("spread-within-abs", {"type": "number", "tolerance": {"abs": 0.01}}, [0.5, 0.505, 0.51], True),
    (
        "chain-exceeds-abs",
        {"type": "number", "tolerance": {"abs": 0.01}},
        [0.5, 0.51, 0.52],
        False,
    ),
    ("strings", {"type": "string", "case": "fold"}, ["A", "a", "Ａ"], True),
    ("money", {"type": "money", "currency": "JPY"}, [{"amount": 5, "currency": "JPY"}] * 3, True),
]


@pytest.mark.parametrize(
    ("spec", "values", "expected"),
    [case[1:] for case in ALL_AGREE],
    ids=[case[0] for case in ALL_AGREE],
)
def test_all_agree(spec: dict[str, Any], values: list[object], expected: bool) -> None:
    """all_agree judges the whole set: max - min against the tolerance, never a chain."""
    normalizer = normalizer_for(field(**spec))
    assert expected == normalizer.all_agree([normalizer.canon(v) for v in values])


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "number"},
        {"type": "string"},
        {"type": "money", "currency": "USD"},
        {"type": "json"},
    ],
    ids=["number", "string", "money", "json"],
)
def test_absent_agrees_only_with_absent(spec: dict[str, Any]) -> None:
    """ABSENT (not_found) agrees with ABSENT and with no value, and renders as null."""
    normalizer = normalizer_for(field(**spec))
    value = {"money": {"amount": 0, "currency": "USD"}}.get(spec["type"], "0")
    present = normalizer.canon(value)
    assert True is normalizer.agree(ABSENT, ABSENT)
    assert False is normalizer.agree(ABSENT, present)
    assert False is normalizer.agree(present, ABSENT)
    assert True is normalizer.all_agree([ABSENT, ABSENT])
    assert False is normalizer.all_agree([ABSENT, present])
    assert False is normalizer.all_agree([present, ABSENT])
    assert None is normalizer.render(ABSENT)


def test_absent_is_a_unique_hashable_sentinel() -> None:
    """ABSENT has repr ABSENT, hashes, and survives copy and pickle as the same object."""
    expected = "ABSENT"
    assert expected == repr(ABSENT)
    assert {ABSENT} == {ABSENT}
    assert ABSENT is copy.deepcopy(ABSENT)
    assert ABSENT is pickle.loads(pickle.dumps(ABSENT))
    assert ABSENT != None  # noqa: E711


# --------------------------------------------------------------------------- render

RENDER: list[tuple[str, dict[str, Any], object, object]] = [
    (
        "money",
        {"type": "money", "currency": "USD"},
        {"amount": "12.50", "currency": "USD"},
        {"minor": 1250, "currency": "USD"},
    ),
    (
        "quantity",
        {"type": "quantity", "unit": "kg"},
        {"value": 1500, "unit": "g"},
        {"value": 1.5, "unit": "kg"},
    ),
    ("timestamp-utc-z", {"type": "timestamp"}, "2026-09-14T11:12:03+02:00", "2026-09-14T09:12:03Z"),
    (
        "timestamp-milliseconds",
        {"type": "timestamp"},
        "2026-09-14T09:12:03.5Z",
        "2026-09-14T09:12:03.500Z",
    ),
    (
        "timestamp-microseconds",
        {"type": "timestamp"},
        "2026-09-14T09:12:03.123456789Z",
        "2026-09-14T09:12:03.123456Z",
    ),
    ("json", {"type": "json"}, {"b": [1, 2], "a": None}, {"a": None, "b": [1, 2]}),
    ("enum", {"type": "enum", "values": STATUSES}, " paid ", "paid"),
    ("number", {"type": "number"}, "2.5", 2.5),
    ("null", {"type": "string", "nullable": True}, None, None),
]


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [case[1:] for case in RENDER],
    ids=[case[0] for case in RENDER],
)
def test_render(spec: dict[str, Any], value: object, expected: object) -> None:
    """Render shows the canonical value as a decision record's `canonical`."""
    normalizer = normalizer_for(field(**spec))
    assert expected == normalizer.render(normalizer.canon(value))


# --------------------------------------------------------------------------- caching, units


def test_normalizer_is_reused_per_field() -> None:
    """normalizer_for returns the same object for a field, and for an equal field."""
    spec = {"type": "enum", "values": STATUSES, "case": "fold"}
    first = field(**spec)
    assert normalizer_for(first) is normalizer_for(first)
    assert normalizer_for(first) is normalizer_for(field(**spec))
    assert normalizer_for(first) is not normalizer_for(field(**{**spec, "case": "preserve"}))


@given(st.lists(st.text(max_size=300), min_size=1, max_size=20))
def test_a_string_normalizes_the_same_when_remembered(values: list[str]) -> None:
    """A string field gives a value the same canon the first time, again, and past the bound."""
    spec = {"type": "string", "case": "fold", "whitespace": "collapse"}
    remembering = normalizer_for(field(**spec))
    fresh = [type(remembering)(field(**spec)).canon(v) for v in values]
    assert fresh == [remembering.canon(v) for v in values] == [remembering.canon(v) for v in values]


def test_remembered_strings_are_bounded() -> None:
    """Past its bound a string field stops remembering and still normalizes."""
    normalizer: Any = type(normalizer_for(field(type="string")))(field(type="string"))
    for n in range(normalizer._MAX_REMEMBERED + 10):
        assert f"v{n}" == normalizer.canon(f" v{n}")
    assert normalizer._MAX_REMEMBERED == len(normalizer.seen)


def test_converter_is_cached_and_plain_float() -> None:
    """One plain-float converter is built per unit pair."""
    assert converter("g", "kg") is converter("g", "kg")
    kilograms, minutes = 1.5, 120.0
    assert kilograms == converter("g", "kg")(1500.0)
    assert minutes == converter("h", "min")(2.0)


def test_incompatible_units_raise_unit_error() -> None:
    """Converting between dimensions names both units and both dimensions."""
    with pytest.raises(UnitError) as caught:
        converter("kg", "m")
    expected = "cannot convert kg to m: incompatible dimensions ([mass] vs [length])"
    assert expected == str(caught.value)


@pytest.mark.parametrize("unit", ["furlongz", "", "kg)", "2 kg"], ids=repr)
def test_check_unit_rejects_what_pint_does_not_know(unit: str) -> None:
    """check_unit raises UnitError for unknown or unparseable units."""
    with pytest.raises(UnitError):
        check_unit(unit)


def test_quantity_field_with_unknown_unit_is_refused_by_the_policy() -> None:
    """A policy naming a unit pint does not know fails validation with pint's reason."""
    with pytest.raises(ValueError, match="unknown unit 'parsec2'"):
        field(type="quantity", unit="parsec2")


# --------------------------------------------------------------------------- properties

STRING_SPECS = [
    {"type": "string"},
    {"type": "string", "case": "fold"},
    {"type": "string", "whitespace": "collapse"},
    {"type": "string", "whitespace": "preserve", "case": "fold"},
    {"type": "text", "case": "fold", "whitespace": "collapse"},
]


@pytest.mark.parametrize(
    "spec",
    STRING_SPECS,
    ids=[
        f"{s['type']}-{s.get('case', 'preserve')}-{s.get('whitespace', 'trim')}"
        for s in STRING_SPECS
    ],
)
@given(text=st.text())
def test_normalize_is_idempotent(spec: dict[str, Any], text: str) -> None:
    """For strings, canon(canon(x)) == canon(x) under every case and whitespace policy."""
    normalizer = normalizer_for(field(**spec))
    once = normalizer.canon(text)
    assert once == normalizer.canon(once)


@given(
    values=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True),
    fold=st.booleans(),
    data=st.data(),
)
def test_normalize_is_idempotent_for_enums(
    values: list[str], fold: bool, data: st.DataObject
) -> None:
    """For enums, a canonical value is an allowed value that normalizes to itself."""
    normalizer = normalizer_for(
        field(type="enum", values=values, case="fold" if fold else "preserve")
    )
    choice = data.draw(st.sampled_from(values))
    once = normalizer.canon(choice)
    assert once == normalizer.canon(once)
    assert once in values


@given(value=st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**18), 10**18))
def test_normalize_is_idempotent_for_numbers(value: float) -> None:
    """For numbers, canon(canon(x)) == canon(x), and the canon is a float."""
    normalizer = normalizer_for(field(type="number"))
    once = normalizer.canon(value)
    assert once == normalizer.canon(once)
    assert float is type(once)


TOLERANCES = [None, {"abs": 0.01}, {"rel": 0.001}, {"abs": 0.5, "rel": 0.01}, {"abs": 0.0}]


@given(
    values=st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
        | st.decimals("-2", "2", places=2),
        min_size=1,
        max_size=8,
    ),
    tolerance=st.sampled_from(TOLERANCES),
    data=st.data(),
)
def test_all_agree_does_not_depend_on_order(
    values: list[float | Decimal], tolerance: dict[str, float] | None, data: st.DataObject
) -> None:
    """Numbers with a tolerance: every order of the same values gives the same answer."""
    normalizer = normalizer_for(field(type="number", tolerance=tolerance))
    canons = [normalizer.canon(v) for v in values]
    shuffled = data.draw(st.permutations(canons))
    assert normalizer.all_agree(canons) == normalizer.all_agree(shuffled)
    assert normalizer.all_agree(canons) == normalizer.all_agree(list(reversed(canons)))


@given(
    values=st.lists(st.decimals("-5", "5", places=2), min_size=1, max_size=8),
    tolerance=st.sampled_from([{"abs": 0.01}, {"abs": 0.1}, {"rel": 0.05}]),
)
def test_all_agree_is_max_minus_min_within_tolerance(
    values: list[Decimal], tolerance: dict[str, float]
) -> None:
    """all_agree is true exactly when max - min (as written) is within the tolerance."""
    normalizer = normalizer_for(field(type="number", tolerance=tolerance))
    lo, hi = min(values), max(values)
    bound = max(
        Decimal(str(tolerance.get("abs", 0))),
        Decimal(str(tolerance.get("rel", 0))) * max(abs(lo), abs(hi)),
    )
    expected = hi - lo <= bound
    assert expected == normalizer.all_agree([normalizer.canon(str(v)) for v in values])


@given(a=st.floats(-1e9, 1e9), b=st.floats(-1e9, 1e9), tolerance=st.sampled_from(TOLERANCES))
def test_agree_is_symmetric(a: float, b: float, tolerance: dict[str, float] | None) -> None:
    """agree(a, b) == agree(b, a) for numbers under every tolerance."""
    normalizer = normalizer_for(field(type="number", tolerance=tolerance))
    ca, cb = normalizer.canon(a), normalizer.canon(b)
    assert normalizer.agree(ca, cb) == normalizer.agree(cb, ca)


@given(
    cents=st.integers(-(10**15), 10**15),
    currency=st.sampled_from([("USD", 2), ("JPY", 0), ("KWD", 3)]),
    as_float=st.booleans(),
)
def test_money_never_uses_float_arithmetic(
    cents: int, currency: tuple[str, int], as_float: bool
) -> None:
    """A decimal amount (string, or the float of it) gives exactly its minor units."""
    code, precision = currency
    text = str(Decimal(cents).scaleb(-precision))
    amount: object = float(text) if as_float and abs(cents) < 10**14 else text
    actual = canonical(field(type="money", currency=code), {"amount": amount, "currency": code})
    assert (cents, code) == actual


@pytest.mark.parametrize(
    ("amount", "minor"),
    [("0.1", 10), (0.1, 10), ("0.29", 29), (0.29, 29), (1.15, 115), (4.35, 435), (0.07, 7)],
    ids=repr,
)
def test_money_amounts_that_floats_get_wrong(amount: object, minor: int) -> None:
    """Amounts whose float product is off (0.29 * 100 == 28.999999999999996) stay exact."""
    actual = canonical(field(type="money", currency="USD"), {"amount": amount, "currency": "USD"})
    assert (minor, "USD") == actual


@given(
    instant=st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    offset_minutes=st.integers(-23 * 60 - 59, 23 * 60 + 59),
)
def test_same_instant_in_any_offset_has_one_canon(instant: datetime, offset_minutes: int) -> None:
    """A timestamp written with any UTC offset normalizes to the same UTC instant."""
    normalizer = normalizer_for(field(type="timestamp"))
    local = instant.astimezone(timezone(timedelta(minutes=offset_minutes)))
    utc_text = instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert normalizer.canon(utc_text) == normalizer.canon(local.isoformat())
    assert normalizer.canon(utc_text) == normalizer.canon(
        normalizer.render(normalizer.canon(utc_text))
    )


@settings(deadline=None)
@given(
    value=st.floats(-1e9, 1e9),
    units=st.sampled_from([("g", "kg"), ("h", "min"), ("degC", "degF"), ("inch", "cm")]),
)
def test_cached_converter_matches_pint(value: float, units: tuple[str, str]) -> None:
    """The plain-float converter gives what pint gives, to float precision."""
    src, dst = units
    expected = convert_uncached(value, src, dst)
    actual = converter(src, dst)(value)
    assert math.isclose(expected, actual, rel_tol=1e-12, abs_tol=1e-9)
