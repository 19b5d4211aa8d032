"""quantity values: a value and a unit, converted to the field's unit."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import Final

from pydantic import JsonValue

from claimwatch.core.values.base import NormalizationError, _describe
from claimwatch.core.values.numbers import _float_of, _NumberNormalizer
from claimwatch.models.policy import FieldPolicy
from claimwatch.units import UnitError, converter

_QUANTITY_NAMES: Final = {"value", "unit"}


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
