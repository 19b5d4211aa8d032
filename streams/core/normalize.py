"""Normalization of claim values per field type (SPEC section 3); pure and deterministic.

Every claim value is turned into a *canonical* value: hashable, comparable, and the same
for two values that mean the same thing under the field's policy (money in integer minor
units of an explicit currency, quantities in the field's unit, timestamps in UTC
microseconds, strings after NFKC and the field's whitespace and case rules, numbers as
floats compared with the field's tolerance). A value that breaks the field's contract
raises NormalizationError whose message says what was expected and what was received.

One normalizer is built per field policy (cached) and holds the precomputed per-field
state, so the per-claim path does no pint, babel or regex compilation work.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from decimal import Context, Decimal, Inexact
from typing import Final, Protocol

from pydantic import JsonValue

from schemas.policy import FieldPolicy, FieldType
from streams.core.limits import (
    INT64_MIN,
    INT64_TEXT,
    MAX_MONEY_MINOR,
    MAX_NESTING,
    clip,
    describe,
    int_fits,
    number_problem,
)
from streams.core.units import UnitError, converter

__all__ = [
    "ABSENT",
    "DEFAULT_REL_TOLERANCE",
    "NormalizationError",
    "Normalizer",
    "canonical",
    "normalizer_for",
]

#: Relative tolerance of number and quantity fields that configure none (float noise only).
DEFAULT_REL_TOLERANCE: Final = 1e-9


class NormalizationError(ValueError):
    """A value that breaks its field's contract; str(exc) is a reason a human can act on."""


class _Absent:
    """The type of ABSENT: evidence of absence (a `not_found` claim)."""

    __slots__ = ()
    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # pickle/copy resolve the module global: identity is preserved

    def __hash__(self) -> int:
        return 0x0AB5E27

    def __eq__(self, other: object) -> bool:
        return other is self


#: Stands for "not_found" (evidence of absence); agrees only with itself.
ABSENT: Final = _Absent()


# --------------------------------------------------------------------------- helpers

_NUMERIC: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_WS_RUN: Final = re.compile(r"\s+")
_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US_PER_S: Final = 1_000_000
#: Decimal arithmetic for money: traps on any rounding, so an accepted amount is exact.
_DEC: Final = Context(prec=200, traps=[Inexact])
#: Decimal arithmetic for tolerance boundaries (doubles need at most ~770 digits).
_EXACT: Final = Context(prec=1000)
#: Largest decimal exponent accepted in a money or integer string (keeps int() cheap).
_MAX_EXPONENT: Final = 308
_MONEY_NAMES: Final = {"amount", "currency", "minor_units"}
_QUANTITY_NAMES: Final = {"value", "unit"}


def _describe(value: object) -> str:
    """Name a received value the way a JSON producer thinks of it: `number 12`, `string 'x'`.

    Scalars are named as `limits.describe` names them; a Decimal, an object or an array
    is shown with its (clipped) text, which a type error in a value is easier to read by.
    """
    if isinstance(value, Decimal):
        return f"number {clip(str(value))}"
    if isinstance(value, Mapping):
        try:
            text = json.dumps(value, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            return f"an object of {len(value)} key(s)"
        return f"object {clip(text)}"
    if isinstance(value, list | tuple):
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError, RecursionError):
            return f"an array of {len(value)} item(s)"
        return f"array {clip(text)}"
    if value is None or isinstance(value, bool | int | float | str):
        return describe(value)
    return f"{type(value).__name__} {clip(repr(value))}"


def _float_of(value: object, what: str) -> float:
    """Parse a JSON number or a numeric string to a finite float (bool rejected)."""
    if isinstance(value, bool):
        raise NormalizationError(f"expected {what}, got {_describe(value)}")
    if isinstance(value, float):
        result = value
    elif isinstance(value, int):
        try:
            result = float(value)
        except OverflowError:
            raise NormalizationError(
                f"expected {what} within the range of a double, got {_describe(value)}"
            ) from None
    elif isinstance(value, Decimal):
        result = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if _NUMERIC.fullmatch(text) is None:
            raise NormalizationError(f"expected {what}, got {_describe(value)}")
        result = float(text)
    else:
        raise NormalizationError(f"expected {what}, got {_describe(value)}")
    if not math.isfinite(result):
        raise NormalizationError(f"expected {what} (finite), got {_describe(value)}")
    return result + 0.0  # -0.0 -> 0.0


def _decimal_of(value: object, what: str) -> Decimal:
    """Parse a JSON number or numeric string to a finite Decimal, never via float arithmetic."""
    if isinstance(value, bool):
        raise NormalizationError(f"expected {what}, got {_describe(value)}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NormalizationError(f"expected {what} (finite), got {_describe(value)}")
        result = Decimal(repr(value))  # the shortest repr: 0.1 stays 0.1
    elif isinstance(value, Decimal):
        result = value
    elif isinstance(value, str):
        text = value.strip()
        if _NUMERIC.fullmatch(text) is None:
            raise NormalizationError(f"expected {what}, got {_describe(value)}")
        result = Decimal(text)
    else:
        raise NormalizationError(f"expected {what}, got {_describe(value)}")
    if not result.is_finite():
        raise NormalizationError(f"expected {what} (finite), got {_describe(value)}")
    if result and result.adjusted() > _MAX_EXPONENT:
        raise NormalizationError(f"expected {what} below 1e{_MAX_EXPONENT}, got {_describe(value)}")
    return result


def _fold(text: str) -> str:
    """casefold, then NFKC again (casefold can undo NFKC), up to the fixed point."""
    for _ in range(4):
        folded = unicodedata.normalize("NFKC", text.casefold())
        if folded == text:
            break
        text = folded
    return text


def _is_float_canon(value: Hashable) -> bool:
    return type(value) is float


def _within(a: float, b: float, abs_tol: float, rel_tol: float) -> bool:
    """|a - b| <= max(abs_tol, rel_tol * max(|a|, |b|)), exact at the boundary.

    In binary floating point 0.51 - 0.50 is 0.010000000000000009, so a tolerance of 0.01
    would reject a pair the user wrote as exactly 0.01 apart. Near the boundary the test
    is redone in decimal on the shortest representations (the numbers as written).
    """
    diff = abs(a - b)
    bound = max(abs_tol, rel_tol * max(abs(a), abs(b)))
    slack = 1e-12 * max(bound, abs(a), abs(b))
    if diff <= bound - slack:
        return True
    if diff > bound + slack:
        return False
    da, db = Decimal(repr(a)), Decimal(repr(b))
    exact_diff = _EXACT.abs(_EXACT.subtract(da, db))
    exact_bound = max(
        Decimal(repr(abs_tol)),
        _EXACT.multiply(Decimal(repr(rel_tol)), max(abs(da), abs(db))),
    )
    return exact_diff <= exact_bound


# --------------------------------------------------------------------------- normalizers


class Normalizer(Protocol):
    """Turns values of one field into canonical values and compares them."""

    field_type: FieldType

    def canon(self, value: object) -> Hashable:
        """The normalized, hashable value; raises NormalizationError with a reason."""
        ...

    def agree(self, a: Hashable, b: Hashable) -> bool:
        """Whether two canonical values (either may be ABSENT or None) agree."""
        ...

    def all_agree(self, values: Sequence[Hashable]) -> bool:
        """Whether all canonical values agree; independent of order; empty -> True."""
        ...

    def render(self, canon: Hashable) -> JsonValue:
        """What a decision record shows as `canonical` (ABSENT -> None)."""
        ...


class _Base:
    """Shared behaviour: nulls, ABSENT, equality-based agreement, identity rendering."""

    field_type: FieldType = FieldType.JSON

    def __init__(self, field: FieldPolicy) -> None:
        self.field_type = field.type
        self.nullable = field.nullable

    def canon(self, value: object) -> Hashable:
        if value is None:
            if self.nullable:
                return None
            raise NormalizationError(
                "null is not allowed for this field (set nullable: true to allow it)"
            )
        if value is ABSENT:
            return ABSENT
        return self._canon(value)

    def _canon(self, value: object) -> Hashable:  # pragma: no cover - overridden
        raise NotImplementedError

    def agree(self, a: Hashable, b: Hashable) -> bool:
        return a == b and type(a) is type(b)

    def all_agree(self, values: Sequence[Hashable]) -> bool:
        if not values:
            return True
        first = values[0]
        return all(self.agree(first, other) for other in values[1:])

    def render(self, canon: Hashable) -> JsonValue:
        if canon is None or canon is ABSENT:
            return None
        return self._render(canon)

    def _render(self, canon: Hashable) -> JsonValue:
        return canon  # type: ignore[return-value]  # str, int, bool canons are JSON already


class _StringNormalizer(_Base):
    """string and text: NFKC, then whitespace policy, then case policy."""

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.fold = field.case == "fold"
        self.whitespace = field.whitespace

    def _canon(self, value: object) -> Hashable:
        if not isinstance(value, str):
            raise NormalizationError(f"expected a string, got {_describe(value)}")
        text = unicodedata.normalize("NFKC", value)
        if self.fold:
            text = _fold(text)
        if self.whitespace == "trim":
            text = text.strip()
        elif self.whitespace == "collapse":
            text = _WS_RUN.sub(" ", text).strip()
        return text


class _EnumNormalizer(_Base):
    """enum: a string among the field's `values`; canon is the value as the policy writes it."""

    #: Bound on the remembered spellings (policy values plus accepted variants).
    _MAX_SPELLINGS: Final = 1024

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.fold = field.case == "fold"
        self.values: tuple[str, ...] = tuple(field.values or ())
        self.allowed = ", ".join(self.values)
        lookup: dict[str, str] = {}
        for allowed in self.values:
            lookup.setdefault(self._key(allowed), allowed)  # first spelling wins on collision
        self.lookup = lookup
        #: The policy's own spellings, looked up before any normalization work.
        self.exact = {allowed: lookup[self._key(allowed)] for allowed in self.values}

    def _key(self, text: str) -> str:
        key = unicodedata.normalize("NFKC", text).strip()
        return _fold(key).strip() if self.fold else key

    def _canon(self, value: object) -> Hashable:
        if not isinstance(value, str):
            raise NormalizationError(
                f"expected one of the allowed values ({self.allowed}) as a string, "
                f"got {_describe(value)}"
            )
        found = self.exact.get(value)
        if found is None:
            found = self.lookup.get(self._key(value))
            if found is not None and len(self.exact) < self._MAX_SPELLINGS:
                self.exact[value] = found  # remember this spelling (bounded)
        if found is None:
            raise NormalizationError(
                f"{clip(repr(value))} is not one of the allowed values: {self.allowed}"
            )
        return found


class _BoolNormalizer(_Base):
    """bool: JSON true/false, or the strings "true"/"false" in any case."""

    _WORDS: Final = {"true": True, "false": False}

    def _canon(self, value: object) -> Hashable:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            found = self._WORDS.get(value.strip().lower())
            if found is not None:
                return found
        raise NormalizationError(f"expected true or false, got {_describe(value)}")


class _IntegerNormalizer(_Base):
    """integer: an int, or an integral float or numeric string ("12", 12.0)."""

    def _canon(self, value: object) -> Hashable:
        if isinstance(value, int) and not isinstance(value, bool):
            return _int64(int(value), value)
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise NormalizationError(f"expected a whole number, got {_describe(value)}")
            # strict at both ends: orjson reads a literal below -2**63 as a float that may
            # round to exactly -2**63 (and no int() of a 1e308)
            if not INT64_MIN < value < -float(INT64_MIN):
                raise _beyond_int64(value)
            return _int64(int(value), value)
        number = _decimal_of(value, "a whole number")
        if number != number.to_integral_value():
            raise NormalizationError(f"expected a whole number, got {_describe(value)}")
        if number and number.adjusted() > 18:  # beyond 10**19: no int() of a 1e300 either
            raise _beyond_int64(value)
        return _int64(int(number), value)


def _beyond_int64(value: object) -> NormalizationError:
    return NormalizationError(
        f"expected a whole number within the integer limit ({INT64_TEXT}), got {_describe(value)}"
    )


def _int64(number: int, value: object) -> int:
    """The number when it is within signed 64-bit; else the limit is the reason."""
    if not int_fits(number):
        raise _beyond_int64(value)
    return number


class _NumberNormalizer(_Base):
    """number: a finite float, compared with the field's absolute/relative tolerance."""

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        tol = field.tolerance
        if tol is None or (tol.abs is None and tol.rel is None):
            self.abs_tol, self.rel_tol = 0.0, DEFAULT_REL_TOLERANCE
        else:
            self.abs_tol, self.rel_tol = tol.abs or 0.0, tol.rel or 0.0

    def _canon(self, value: object) -> Hashable:
        return _float_of(value, "a number")

    def agree(self, a: Hashable, b: Hashable) -> bool:
        if _is_float_canon(a) and _is_float_canon(b):
            return _within(a, b, self.abs_tol, self.rel_tol)  # type: ignore[arg-type]
        return a == b and type(a) is type(b)

    def all_agree(self, values: Sequence[Hashable]) -> bool:
        if not values:
            return True
        if all(_is_float_canon(v) for v in values):
            lo = min(values)  # type: ignore[type-var]
            hi = max(values)  # type: ignore[type-var]
            return _within(lo, hi, self.abs_tol, self.rel_tol)  # type: ignore[arg-type]
        first = values[0]
        return not _is_float_canon(first) and all(
            v == first and type(v) is type(first) for v in values
        )


class _QuantityNormalizer(_NumberNormalizer):
    """quantity: {"value": 3.5, "unit": "kg"} converted to the field's unit."""

    #: Bound on the per-field cache of converters (and refusals) by claim unit.
    _MAX_UNITS: Final = 256

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.unit: str = field.unit or ""
        self._converters: dict[str, Callable[[float], float] | str] = {}

    def _converter(self, unit: str) -> Callable[[float], float]:
        found = self._converters.get(unit)
        if found is None:
            try:
                found = converter(unit, self.unit)
            except UnitError as exc:
                found = str(exc)
            if len(self._converters) < self._MAX_UNITS:
                self._converters[unit] = found
        if isinstance(found, str):
            raise NormalizationError(found)
        return found

    def _canon(self, value: object) -> Hashable:
        if not isinstance(value, Mapping) or "value" not in value or "unit" not in value:
            raise NormalizationError(
                f'a quantity needs a value and a unit, e.g. {{"value": 3.5, "unit": '
                f'"{self.unit}"}}, got {_describe(value)}'
            )
        if len(value) != 2:
            extra = sorted(str(k) for k in value if k not in _QUANTITY_NAMES)
            raise NormalizationError(
                f"unexpected key {extra[0]!r} in a quantity (expected value and unit)"
            )
        unit = value["unit"]
        if not isinstance(unit, str):
            raise NormalizationError(
                f"expected the unit as a string such as {self.unit!r}, got {_describe(unit)}"
            )
        magnitude = _float_of(value["value"], "a number as the quantity's value")
        result = self._converter(unit)(magnitude)
        if not math.isfinite(result):
            raise NormalizationError(
                f"{magnitude} {unit} is out of range when converted to {self.unit}"
            )
        return result + 0.0

    def _render(self, canon: Hashable) -> JsonValue:
        return {"value": canon, "unit": self.unit}  # type: ignore[dict-item]


@functools.cache
def _currency_precision(currency: str) -> int:
    """Number of minor-unit digits of an ISO 4217 currency (JPY 0, USD 2, KWD 3), from babel."""
    from babel.numbers import get_currency_precision

    return int(get_currency_precision(currency))


class _MoneyNormalizer(_Base):
    """money: {"amount", "currency", "minor_units"} -> (minor units as int, currency)."""

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self.currency: str = field.currency or ""
        self.precision = _currency_precision(self.currency)
        self.factor = 10**self.precision
        self.scale = Decimal(self.factor)
        self.example = f'{{"amount": 1250, "currency": "{self.currency}", "minor_units": true}}'

    def _canon(self, value: object) -> Hashable:
        if not isinstance(value, Mapping) or "amount" not in value or "currency" not in value:
            raise NormalizationError(
                "a money value needs an amount and a currency, "
                f"e.g. {self.example}, got {_describe(value)}"
            )
        if len(value) > 2 and any(k not in _MONEY_NAMES for k in value):
            extra = sorted(str(k) for k in value if k not in _MONEY_NAMES)
            raise NormalizationError(
                f"unexpected key {extra[0]!r} in a money value "
                "(expected amount, currency and optionally minor_units)"
            )
        currency = value["currency"]
        if currency != self.currency:
            if isinstance(currency, str) and currency.strip().upper() == self.currency:
                raise NormalizationError(
                    f"currency {currency!r} must be written as the upper-case ISO 4217 code "
                    f"{self.currency}"
                )
            shown = currency if isinstance(currency, str) else _describe(currency)
            raise NormalizationError(
                f"currency {shown} does not match the field's {self.currency}: "
                "amounts in different currencies are not comparable"
            )
        minor_units = value.get("minor_units", False)
        if not isinstance(minor_units, bool):
            raise NormalizationError(
                f"minor_units must be true or false, got {_describe(minor_units)}"
            )
        raw = value["amount"]
        if type(raw) is int:  # fast path: whole numbers need no decimal work
            minor = raw if minor_units else raw * self.factor
            if -MAX_MONEY_MINOR <= minor <= MAX_MONEY_MINOR:
                return (minor, self.currency)
            raise self._beyond(raw)
        amount = _decimal_of(raw, "the amount as a number")
        if minor_units:
            if amount != amount.to_integral_value():
                raise NormalizationError(
                    f"an amount in minor units must be a whole number of {self.currency} "
                    f"minor units, got {clip(str(amount))}"
                )
            return (self._minor(amount, raw), self.currency)
        try:
            minor = _DEC.multiply(amount, self.scale)
        except Inexact:
            raise NormalizationError(
                "the amount has too many digits to be exact: expected at most 200, "
                f"got {clip(str(amount))}"
            ) from None
        if minor != minor.to_integral_value():
            raise NormalizationError(
                f"{clip(str(amount))} has more decimals than {self.currency} allows "
                f"({self.precision})"
            )
        return (self._minor(minor, raw), self.currency)

    def _minor(self, minor: Decimal, raw: object) -> int:
        """A whole number of minor units as an int, within the money limit."""
        if minor and minor.adjusted() > 18:  # beyond 10**19: never int() of a 1e300
            raise self._beyond(raw)
        result = int(minor)
        if not -MAX_MONEY_MINOR <= result <= MAX_MONEY_MINOR:
            raise self._beyond(raw)
        return result

    def _beyond(self, raw: object) -> NormalizationError:
        return NormalizationError(
            f"the amount {_describe(raw)} is beyond the money limit: at most {MAX_MONEY_MINOR} "
            f"{self.currency} minor units in magnitude ({INT64_TEXT})"
        )

    def _render(self, canon: Hashable) -> JsonValue:
        minor: int = canon[0]  # type: ignore[index]
        currency: str = canon[1]  # type: ignore[index]
        return {"minor": minor, "currency": currency}


class _TimestampNormalizer(_Base):
    """timestamp: RFC 3339 with an offset -> integer microseconds since the epoch (UTC)."""

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self._zones: dict[int, timezone] = {0: UTC}

    def _zone(self, minutes: int) -> timezone:
        zone = self._zones.get(minutes)
        if zone is None:
            zone = timezone(timedelta(minutes=minutes))
            if len(self._zones) < 256:
                self._zones[minutes] = zone
        return zone

    def _canon(self, value: object) -> Hashable:
        if isinstance(value, datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                raise NormalizationError(
                    f"timestamp has no UTC offset: expected e.g. 2026-09-14T09:12:03Z, "
                    f"got {value.isoformat()!r}"
                )
            return _micros(value)
        if not isinstance(value, str):
            raise NormalizationError(
                f"expected an RFC 3339 timestamp string such as 2026-09-14T09:12:03Z, "
                f"got {_describe(value)}"
            )
        match = _RFC3339.fullmatch(value.strip())
        if match is None:
            try:
                naive = datetime.fromisoformat(value.strip()).tzinfo is None
            except ValueError:
                naive = False
            if naive:
                raise NormalizationError(
                    f"timestamp has no UTC offset: expected e.g. 2026-09-14T09:12:03Z or "
                    f"+02:00 at the end, got {_describe(value)}"
                )
            raise NormalizationError(
                f"expected an RFC 3339 timestamp such as 2026-09-14T09:12:03Z, "
                f"got {_describe(value)}"
            )
        year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = match.groups()
        if second == "60":
            raise NormalizationError(
                f"leap seconds are not supported: expected seconds 00-59, got {_describe(value)}"
            )
        if zulu:
            zone = UTC
        else:
            if int(off_h) > 23 or int(off_m) > 59:
                raise NormalizationError(
                    f"expected a UTC offset between -23:59 and +23:59, got {_describe(value)}"
                )
            minutes = int(off_h) * 60 + int(off_m)
            zone = self._zone(-minutes if sign == "-" else minutes)
        micro = int((frac or "0")[:6].ljust(6, "0"))  # finer than microseconds: truncated
        try:
            stamp = datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second), micro, zone
            )
        except ValueError as exc:
            raise NormalizationError(
                f"expected a valid date and time, got {_describe(value)} ({exc})"
            ) from None
        return _micros(stamp)

    def _render(self, canon: Hashable) -> JsonValue:
        micros: int = canon  # type: ignore[assignment]
        s = _EPOCH + timedelta(microseconds=micros)
        text = f"{s.year:04d}-{s.month:02d}-{s.day:02d}T{s.hour:02d}:{s.minute:02d}:{s.second:02d}"
        if s.microsecond:
            if s.microsecond % 1000 == 0:
                text += f".{s.microsecond // 1000:03d}"
            else:
                text += f".{s.microsecond:06d}"
        return text + "Z"


def _micros(stamp: datetime) -> int:
    """Microseconds since the epoch; the instant must be representable in UTC (years 1-9999)."""
    try:
        stamp.astimezone(UTC)
    except OverflowError:
        raise NormalizationError(
            f"expected a timestamp between years 0001 and 9999 in UTC, got {stamp.isoformat()!r}"
        ) from None
    delta = stamp - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * _US_PER_S + delta.microseconds


def _json_ready(value: object) -> object:
    """Integral floats as ints (1.0 and 1 are one JSON number); tuples as lists."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def _json_problem(value: object) -> str | None:
    """Why a JSON value cannot be carried: too deep, or a number beyond the limits.

    Without recursion, so a deep value is refused here instead of overflowing the stack in
    `_json_ready` or json.dumps below.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                return f"expected a JSON value nested at most {MAX_NESTING} levels"
            items = item.values() if isinstance(item, Mapping) else item
            stack.extend((v, depth + 1) for v in items)
        else:
            problem = number_problem(item)
            if problem is not None:
                return f"expected a JSON value: {problem}"
    return None


class _JsonNormalizer(_Base):
    """json: any JSON value -> its canonical JSON text (sorted keys, no spaces)."""

    def _canon(self, value: object) -> Hashable:
        problem = _json_problem(value)
        if problem is not None:
            raise NormalizationError(problem)
        try:
            return json.dumps(
                _json_ready(value),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
                allow_nan=False,
            )
        except (TypeError, ValueError) as exc:
            raise NormalizationError(
                f"expected a JSON value, got {_describe(value)} ({exc})"
            ) from None

    def _render(self, canon: Hashable) -> JsonValue:
        result: JsonValue = json.loads(canon)  # type: ignore[arg-type]
        return result


def _text_normalizer(field: FieldPolicy) -> _Base:
    """text: a string whose agreement is decided by the passage comparator (SPEC section 8)."""
    from streams.core.text.field import TextNormalizer  # imports this module: resolved late

    return TextNormalizer(field)


_BY_TYPE: Final[dict[FieldType, Callable[[FieldPolicy], _Base]]] = {
    FieldType.ENUM: _EnumNormalizer,
    FieldType.STRING: _StringNormalizer,
    FieldType.TEXT: _text_normalizer,
    FieldType.BOOL: _BoolNormalizer,
    FieldType.INTEGER: _IntegerNormalizer,
    FieldType.NUMBER: _NumberNormalizer,
    FieldType.MONEY: _MoneyNormalizer,
    FieldType.QUANTITY: _QuantityNormalizer,
    FieldType.TIMESTAMP: _TimestampNormalizer,
    FieldType.JSON: _JsonNormalizer,
}

# --------------------------------------------------------------------------- cache

_CacheKey = tuple[object, ...]
#: Normalizers by the field settings that affect normalization (shared across policies).
_BY_SETTINGS: dict[_CacheKey, Normalizer] = {}
#: Fast path by identity: id(field) -> (field, normalizer). Holding the field keeps the id
#: from being reused while the entry lives.
_BY_ID: dict[int, tuple[FieldPolicy, Normalizer]] = {}
_MAX_ENTRIES: Final = 4096


def _settings(field: FieldPolicy) -> _CacheKey:
    tol = field.tolerance
    return (
        field.type,
        tuple(field.values) if field.values is not None else None,
        field.currency,
        field.unit,
        None if tol is None else (tol.abs, tol.rel),
        field.case,
        field.whitespace,
        field.nullable,
    )


def normalizer_for(field: FieldPolicy) -> Normalizer:
    """The normalizer of a field, built once and reused (cached by identity and by settings)."""
    entry = _BY_ID.get(id(field))
    if entry is not None and entry[0] is field:
        return entry[1]
    key = _settings(field)
    normalizer = _BY_SETTINGS.get(key)
    if normalizer is None:
        normalizer = _BY_TYPE[field.type](field)
        if len(_BY_SETTINGS) >= _MAX_ENTRIES:
            _BY_SETTINGS.clear()
        _BY_SETTINGS[key] = normalizer
    if len(_BY_ID) >= _MAX_ENTRIES:
        _BY_ID.clear()
    _BY_ID[id(field)] = (field, normalizer)
    return normalizer


def canonical(field: FieldPolicy, value: object) -> Hashable:
    """Convenience: the canonical value of `value` under `field` (raises NormalizationError)."""
    return normalizer_for(field).canon(value)
