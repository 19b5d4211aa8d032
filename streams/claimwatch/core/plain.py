"""States as plain values: a dataclass to a JSON-able dict of its fields, and back.

One rule for every state kept in a table or a checkpoint, by pydantic from the dataclass's
own annotations (its serializer and validator are compiled once per class): fields in
declaration order under their own names, nested states as dicts, tuples and sets as lists.
Reading back checks the types the annotations give and copies every typed container (a
state never shares a list with the dict it came from); a missing field takes its default, and
one without a default, or a value of the wrong type, is a `pydantic.ValidationError` (a
`ValueError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from pydantic import TypeAdapter

T = TypeVar("T")


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    """The serializer and validator of a dataclass (built on first use)."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def fields_of(state: Any, **instead: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON-able values, in declaration order.

    `instead` gives the value to write for a field (already plain); None leaves it out.
    """
    obj: dict[str, Any] = _adapter(type(state)).dump_python(
        state, mode="json", exclude={k for k, v in instead.items() if v is None}
    )
    for name, value in instead.items():
        if value is not None:
            obj[name] = value
    return obj


def from_fields(cls: type[T], obj: Any) -> T:
    """An instance of the dataclass `cls` from `fields_of` output (types checked)."""
    state: T = _adapter(cls).validate_python(obj)
    return state


class Plain:
    """Mixin of a dataclass state: `to_obj` and `from_obj` by the rule above."""

    __slots__ = ()

    def to_obj(self) -> dict[str, Any]:
        """A JSON-able copy (for a table, a topic or a checkpoint)."""
        return fields_of(self)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Self:
        """The state back from `to_obj` output."""
        return from_fields(cls, obj)
