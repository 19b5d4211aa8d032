"""The normalizer of a field: by type, built once per field settings and cached."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final

from claimwatch.core.values.base import Normalizer, _Base
from claimwatch.core.values.json_values import _JsonNormalizer
from claimwatch.core.values.money import _MoneyNormalizer
from claimwatch.core.values.numbers import _IntegerNormalizer, _NumberNormalizer
from claimwatch.core.values.quantity import _QuantityNormalizer
from claimwatch.core.values.strings import _BoolNormalizer, _EnumNormalizer, _StringNormalizer
from claimwatch.core.values.timestamps import _TimestampNormalizer
from claimwatch.models.policy import FieldPolicy, FieldType


def _text(field: FieldPolicy) -> _Base:
    """The `text` normalizer, its module imported on first use.

    The passage comparator's tables and patterns take start-up time that a policy
    without a text field never needs.
    """
    from claimwatch.core.text.field import TextNormalizer

    return TextNormalizer(field)


_BY_TYPE: Final[dict[FieldType, Callable[[FieldPolicy], _Base]]] = {
    FieldType.ENUM: _EnumNormalizer,
    FieldType.STRING: _StringNormalizer,
    # text: agreement by the passage comparator (docs/conflict-kinds.md#text-passages)
    FieldType.TEXT: _text,
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
