"""money values: exact decimal amounts in integer minor units of the field's currency."""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from decimal import Context, Decimal, Inexact
from typing import Final

from pydantic import JsonValue

from claimwatch.core.limits import INT64_TEXT, MAX_MONEY_MINOR, clip
from claimwatch.core.values.base import NormalizationError, _Base, _describe
from claimwatch.core.values.numbers import _decimal_of
from claimwatch.models.policy import FieldPolicy

#: Decimal arithmetic for money: traps on any rounding, so an accepted amount is exact.
_DEC: Final = Context(prec=200, traps=[Inexact])
_MONEY_NAMES: Final = {"amount", "currency", "minor_units"}


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
