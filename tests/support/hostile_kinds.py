"""The table-driven kinds of the hostile corpus: a good claim with some keys overridden.

SIMPLE maps a kind to (field, overrides, outcome): `ok` (decided and accepted), `rejected`
(decided as a rejected claim, copied to the DLQ), `decided` (either), `dead` (DLQ only: it
names no fact) or `expired` (DLQ only in the worker: older than the partition clock's
horizon; a file resolved at one `--now` decides it, as stale).
An override of Drop() removes the key; Raw(b"...") is written as that literal JSON text
(numbers that orjson would not write: 10**30, 2**64 - 1, or exactly 1e308).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson


@dataclass(frozen=True, slots=True)
class Drop:
    """Remove this key from the envelope."""


@dataclass(frozen=True, slots=True)
class Raw:
    """Write this literal JSON text as the value."""

    text: bytes


def encode(envelope: dict[str, Any]) -> bytes:
    """JSON bytes of an envelope; a Raw value is written as its literal JSON text."""
    raws: dict[bytes, bytes] = {}

    def placeholder(value: Raw) -> str:
        token = f"@@raw{len(raws)}@@"
        raws[orjson.dumps(token)] = value.text
        return token

    def swap(value: Any) -> Any:
        if isinstance(value, Raw):
            return placeholder(value)
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    text = orjson.dumps(swap(envelope))
    for token, literal in raws.items():
        text = text.replace(token, literal)
    return text


_D: Final = Drop()
#: A 31-digit integer literal: orjson reads it as the float 1e30.
E30: Final = Raw(b"1" + b"0" * 30)
#: The largest unsigned 64-bit integer: orjson reads it as an int beyond signed 64-bit.
U64: Final = Raw(b"18446744073709551615")
USD: Final = "USD"

SIMPLE: Final[dict[str, tuple[str, dict[str, Any], str]]] = {
    # numbers beyond what the field's type can hold, in every numeric field type
    "integer_beyond_64_bits": ("count", {"value": E30}, "rejected"),
    "integer_unsigned_64_bits": ("count", {"value": U64}, "rejected"),
    "integer_int64_max": ("count", {"value": Raw(b"9223372036854775807")}, "ok"),
    "integer_string_1e300": ("count", {"value": "1e300"}, "rejected"),
    "integer_float_1e308": ("count", {"value": Raw(b"1e308")}, "rejected"),
    "number_string_1e400": ("score", {"value": "1e400"}, "rejected"),
    "number_float_max": ("score", {"value": 1.7976931348623157e308}, "ok"),
    "number_unsigned_64_bits": ("score", {"value": U64}, "rejected"),
    "money_amount_string_1e300": (
        "price",
        {"value": {"amount": "1e300", "currency": USD}},
        "rejected",
    ),
    "money_amount_1e308": (
        "price",
        {"value": {"amount": Raw(b"1e308"), "currency": USD}},
        "rejected",
    ),
    "money_minor_units_1e30": (
        "price",
        {"value": {"amount": E30, "currency": USD, "minor_units": True}},
        "rejected",
    ),
    "money_minor_units_overflow": (
        "price",
        {"value": {"amount": 92233720368547759, "currency": USD}},  # x 100 > 2**63 - 1
        "rejected",
    ),
    "money_300_decimals": (
        "price",
        {"value": {"amount": "0." + "1" * 300, "currency": USD}},
        "rejected",
    ),
    "quantity_1e308_tonnes": (
        "weight",
        {"value": {"value": Raw(b"1e308"), "unit": "t"}},
        "rejected",
    ),
    "quantity_string_1e400": ("weight", {"value": {"value": "1e400", "unit": "kg"}}, "rejected"),
    "json_unsigned_64_bits": ("blob", {"value": {"n": [U64]}}, "rejected"),
    "confidence_1e308": ("status", {"confidence": Raw(b"1e308")}, "rejected"),
    "extra_key_unsigned_64_bits": ("status", {"x_count": U64}, "rejected"),
    # wrong types in the keys that name a fact: no fact to decide
    "claim_id_number": ("status", {"claim_id": 7}, "dead"),
    "claim_id_too_long": ("status", {"claim_id": "c" * 129}, "dead"),
    "subject_array": ("status", {"subject": ["invoice:1"]}, "dead"),
    "field_object": ("status", {"field": {"name": "status"}}, "dead"),
    "field_with_pipe": ("status", {"field": "status|x"}, "dead"),
    "source_boolean": ("status", {"source": True}, "dead"),
    "source_empty": ("status", {"source": ""}, "dead"),
    "missing_claim_id": ("status", {"claim_id": _D}, "dead"),
    "missing_subject": ("status", {"subject": _D}, "dead"),
    "subject_nul": ("status", {"subject": "hostile:\x00nul"}, "dead"),
    "subject_escape_character": ("status", {"subject": "hostile:\x1b[31mred"}, "dead"),
    # wrong types in the other envelope keys: the claim breaks its contract
    "status_array": ("status", {"status": ["ok"]}, "rejected"),
    "status_object": ("status", {"status": {"ok": True}}, "rejected"),
    "status_unknown": ("status", {"status": "maybe"}, "rejected"),
    "status_upper_case": ("status", {"status": "OK"}, "rejected"),
    "status_missing": ("status", {"status": _D}, "rejected"),
    "lineage_array": ("status", {"lineage": ["x"]}, "rejected"),
    "lineage_object": ("status", {"lineage": {"x": 1}}, "rejected"),
    "authority_number": ("status", {"authority": 1}, "rejected"),
    "contract_version_number": ("status", {"contract_version": 2}, "rejected"),
    "agent_id_object": ("status", {"agent_id": {"id": 1}}, "rejected"),
    "tool_array": ("status", {"tool": ["search"]}, "rejected"),
    "trace_id_number": ("status", {"trace_id": 1.5}, "rejected"),
    "signature_number": ("status", {"signature": 12}, "rejected"),
    "confidence_string": ("status", {"confidence": "high"}, "rejected"),
    "confidence_above_one": ("status", {"confidence": 1.5}, "rejected"),
    "ok_without_value": ("status", {"value": _D}, "rejected"),
    "null_value_not_nullable": ("status", {"value": None}, "rejected"),
    # wrong value types, one per field type (json takes any JSON value)
    "enum_gets_number": ("status", {"value": 5}, "rejected"),
    "string_gets_array": ("name", {"value": ["Ada"]}, "rejected"),
    "text_gets_object": ("note", {"value": {"text": "x"}}, "rejected"),
    "bool_gets_string": ("flag", {"value": "maybe"}, "rejected"),
    "integer_gets_fraction": ("count", {"value": 1.5}, "rejected"),
    "number_gets_boolean": ("score", {"value": True}, "rejected"),
    "money_gets_string": ("price", {"value": "12.50 USD"}, "rejected"),
    "quantity_gets_number": ("weight", {"value": 3.5}, "rejected"),
    "timestamp_gets_number": ("seen_at", {"value": 1789377120}, "rejected"),
    "timestamp_value_year_0": ("seen_at", {"value": "0000-01-01T00:00:00Z"}, "rejected"),
    # odd observation times
    "time_without_offset": ("status", {"observed_at": "2026-09-14T09:00:00"}, "rejected"),
    "time_year_0": ("status", {"observed_at": "0000-01-01T00:00:00Z"}, "rejected"),
    "time_year_9999": ("status", {"observed_at": "9999-12-31T23:59:59Z"}, "rejected"),
    "time_offset_leaves_year_1": (
        "status",
        {"observed_at": "0001-01-01T00:00:00+23:59"},
        "rejected",
    ),
    "time_offset_leaves_year_9999": (
        "status",
        {"observed_at": "9999-12-31T23:59:59-23:59"},
        "rejected",
    ),
    "time_garbage": ("status", {"observed_at": "yesterday"}, "rejected"),
    "time_number": ("status", {"observed_at": 1789377120}, "rejected"),
    "time_very_long": ("status", {"observed_at": "2026-09-14T09:00:00Z" * 500}, "rejected"),
    "time_an_hour_ahead": ("status", {"observed_at": "2026-09-14T10:00:00Z"}, "rejected"),
    # the leap second is at minute 59 of hour 08, just before T0: decided, accepted or not
    "time_leap_second": ("status", {"observed_at": "2026-09-14T08:59:60Z"}, "decided"),
    # past freshness + grace on arrival: decided as a stale claim of its fact, never dropped
    "time_a_day_old": ("status", {"observed_at": "2026-09-13T09:00:00Z"}, "decided"),
    # Unicode that is valid and names a fact: decided
    "subject_right_to_left_marks": ("status", {"subject": "hostile:\u202eINV-1\u200f"}, "ok"),
    # a field the policy does not name is rejected (strict by default, docs/concepts.md#bad-input)
    "field_combining_characters": ("status", {"field": "sta\u0301tus\u0308"}, "rejected"),
    "source_zero_width": ("status", {"source": "ledger\u200b\ufeff"}, "ok"),
    "subject_astral_plane": ("status", {"subject": "hostile:\U0001f9fe\U000e0001"}, "ok"),
    "subject_very_long": ("status", {"subject": "hostile:" + "s" * 20_000}, "ok"),
    "unknown_field": (
        "status",
        {"field": "not_in_the_policy", "value": {"any": [1]}},
        "rejected",
    ),
    "not_found_without_value": ("status", {"status": "not_found", "value": _D}, "ok"),
    "many_unknown_keys": ("status", {f"x{n}": n for n in range(200)}, "ok"),
}
