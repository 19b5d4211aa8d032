"""integer and number values: exact parsing, the int64 limit, tolerances exact at the boundary."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from decimal import Context, Decimal
from typing import Final

from claimwatch.core.limits import INT64_MIN, INT64_TEXT, int_fits
from claimwatch.core.values.base import NormalizationError, _Base, _describe
from claimwatch.models.policy import FieldPolicy

#: Relative tolerance of number and quantity fields that configure none (float noise only).
DEFAULT_REL_TOLERANCE: Final = 1e-9
_NUMERIC: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
#: Decimal arithmetic for tolerance boundaries (doubles need at most ~770 digits).
_EXACT: Final = Context(prec=1000)
#: Largest decimal exponent accepted in a money or integer string (keeps int() cheap).
_MAX_EXPONENT: Final = 308


def _numeric_text(value: object, what: str) -> str:
    """A numeric string's number, spaces stripped; anything else is not `what`."""
    text = value.strip() if isinstance(value, str) else None
    if text is None or _NUMERIC.fullmatch(text) is None:
        raise NormalizationError(f"expected {what}, got {_describe(value)}")
    return text


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
    else:
        result = float(_numeric_text(value, what))
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
    else:
        result = Decimal(_numeric_text(value, what))
    if not result.is_finite():
        raise NormalizationError(f"expected {what} (finite), got {_describe(value)}")
    if result and result.adjusted() > _MAX_EXPONENT:
        raise NormalizationError(f"expected {what} below 1e{_MAX_EXPONENT}, got {_describe(value)}")
    return result


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
