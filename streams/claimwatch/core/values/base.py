"""What every field type shares: the error, ABSENT, the normalizer protocol and base class."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Hashable, Mapping, Sequence
from decimal import Decimal
from typing import ClassVar, Final, Protocol

from pydantic import JsonValue

from claimwatch.core.limits import clip, describe
from claimwatch.models.policy import FieldPolicy, FieldType


class NormalizationError(ValueError):
    """A value that breaks its field's contract; str(exc) is a reason a human can act on."""


class _Absent:
    """The type of ABSENT: evidence of absence (a `not_found` claim)."""

    __slots__ = ()
    _instance: ClassVar[_Absent | None] = None

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


def _fold(text: str) -> str:
    """casefold, then NFKC again (casefold can undo NFKC), up to the fixed point."""
    for _ in range(4):
        folded = unicodedata.normalize("NFKC", text.casefold())
        if folded == text:
            break
        text = folded
    return text


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

    #: whether near-duplicate values count as one lineage (`duplicate` says which are)
    groups_duplicates: bool

    def duplicate(self, a: Hashable, b: Hashable) -> bool:
        """Whether two canonical values are near-duplicates of each other."""
        ...


class _Base:
    """Shared behaviour: nulls, ABSENT, equality-based agreement, identity rendering."""

    field_type: FieldType = FieldType.JSON
    groups_duplicates: bool = False

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

    def duplicate(self, a: Hashable, b: Hashable) -> bool:  # pragma: no cover - text only
        return False

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
