"""What a claim may carry, so that every value it brings reaches an encoder intact.

The codec (orjson) writes integers within 64 bits and finite floats only, and nests at
most 254 levels (it reads up to 1024). A decision record carries each claim's envelope two
levels down (record -> `claims` -> envelope), the stored fact state four. So a claim is
held to the limits below, checked once when it is built (`scan`), without recursion:

- nesting deeper than MAX_NESTING levels, a string that is not Unicode text (a lone
  surrogate) or a value JSON has no form for: not a claim at all (dead-letter only);
- an integer beyond signed 64-bit or a float that is not finite, anywhere in the claim:
  a contract error, the claim is decided `rejected` with the limit in the reason.

The field types add their own limits in claimwatch.core.normalize (money minor units within
MAX_MONEY_MINOR, integers within INT64_MIN..INT64_MAX).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Smallest and largest integer a claim may carry (signed 64-bit: |x| < 2**63).
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: Largest magnitude of a money amount, in the currency's minor units (signed 64-bit).
MAX_MONEY_MINOR: Final = INT64_MAX
#: Deepest nesting of objects and arrays in a claim, the envelope itself counted as 1.
MAX_NESTING: Final = 64
#: Longest text quoted back in a reason (DLQ headers and decision records stay small).
MAX_QUOTED: Final = 60

INT64_TEXT: Final = "signed 64-bit, |x| < 2**63"


def int_fits(value: int) -> bool:
    """Whether an integer is within signed 64-bit."""
    return INT64_MIN <= value <= INT64_MAX


def describe_int(value: int) -> str:
    """An integer for a reason: its digits, clipped (never str() of a 10**5000)."""
    if value.bit_length() > 200:
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}<an integer of about {digits} digits>"
    return clip(str(value))


def clip(text: str, limit: int = MAX_QUOTED) -> str:
    """At most `limit` characters of a text, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(value: object) -> str:
    """A received value named the way a JSON producer thinks of it, short and safe."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"number {describe_int(value)}"
    if isinstance(value, float):
        return f"number {clip(repr(value))}"
    if isinstance(value, str):
        return f"string {clip(repr(value))}"
    if isinstance(value, Mapping):
        return f"an object of {len(value)} key(s)"
    if isinstance(value, list | tuple):
        return f"an array of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def number_problem(value: object) -> str | None:
    """Why a JSON number cannot be carried (None when it can, or when it is no number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if int_fits(value):
            return None
        return f"integer {describe_int(value)} is beyond the integer limit ({INT64_TEXT})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"number {value!r} is not finite (NaN and infinities have no JSON form)"
    return None


@dataclass(frozen=True, slots=True)
class Scan:
    """What `scan` found: `refused` makes the message no claim, `number` rejects the claim."""

    refused: str | None = None
    number: str | None = None


#: what `scan` finds in an envelope within every limit
CLEAN: Final = Scan()


def scan(envelope: Mapping[str, Any]) -> Scan:
    """Check a whole envelope against the limits above, iteratively (no recursion).

    Written for speed on the common case (every claim passes here once): exact type tests
    first, so a flat envelope of ASCII strings and small numbers never touches the stack.
    """
    number: str | None = None
    # (value, depth, top-level key) — the top-level key names where a problem is
    stack: list[tuple[Any, int, str]] = [(envelope, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        kind = type(value)
        if kind is dict or (kind is not str and isinstance(value, Mapping)):
            if depth > MAX_NESTING:
                return Scan(refused=f"nested deeper than {MAX_NESTING} levels")
            for key, item in value.items():
                if type(key) is not str:
                    return Scan(refused=f"{_at(where)}an object key that is not a string")
                if not key.isascii() and not _is_text(key):
                    return Scan(refused=f"{_at(where)}an object key that is not Unicode text")
                item_kind = type(item)
                if item_kind is str:
                    if item.isascii() or _is_text(item):
                        continue
                elif item_kind is int:
                    if INT64_MIN <= item <= INT64_MAX:
                        continue
                elif item_kind is float:
                    if math.isfinite(item):
                        continue
                elif item is None or item_kind is bool:
                    continue
                stack.append((item, depth + 1, where or key))
        elif kind is list or kind is tuple:
            if depth > MAX_NESTING:
                return Scan(refused=f"nested deeper than {MAX_NESTING} levels")
            stack.extend((item, depth + 1, where) for item in value)
        elif kind is str:
            if not value.isascii() and not _is_text(value):
                return Scan(refused=f"{_at(where)}a string that is not Unicode text")
        elif value is None or isinstance(value, int | float):
            if number is None:
                problem = number_problem(value)
                if problem is not None:
                    number = f"{_at(where)}{problem}"
        else:
            return Scan(refused=f"{_at(where)}a {kind.__name__}, which is no JSON value")
    return CLEAN if number is None else Scan(number=number)


def _at(where: str) -> str:
    return f"`{clip(where, 40)}`: " if where else ""


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fit_for_json(value: object) -> object:
    """The value itself when every number in it fits; else a copy with those numbers as text.

    Each integer beyond signed 64-bit and each non-finite float becomes its text: the record
    of a claim rejected for carrying one still shows what was sent, and still encodes.
    Iterative: nesting is bounded by `scan`, not by the stack.
    """
    if not _has_unfit(value):
        return value
    root: list[object] = [None]
    # (source container, target container, key or index in the target)
    pending: list[tuple[object, Any, Any]] = [(value, root, 0)]
    while pending:
        source, target, slot = pending.pop()
        if isinstance(source, Mapping):
            copy: dict[str, object] = {}
            target[slot] = copy
            for key, item in source.items():
                copy[key] = None
                pending.append((item, copy, key))
        elif isinstance(source, list | tuple):
            items: list[object] = [None] * len(source)
            target[slot] = items
            pending.extend((item, items, i) for i, item in enumerate(source))
        elif number_problem(source) is not None:
            target[slot] = _number_text(source)
        else:
            target[slot] = source
    return root[0]


def _number_text(value: object) -> str:
    if isinstance(value, int) and value.bit_length() <= 200:
        return str(value)
    return describe_int(value) if isinstance(value, int) else repr(value)


def _has_unfit(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif number_problem(item) is not None:
            return True
    return False
