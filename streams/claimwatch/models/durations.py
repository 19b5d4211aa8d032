"""Policy durations (`500ms`, `60s`, `5m`, `24h`, `until_edited`), held in microseconds."""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

US_PER_MS: Final = 1_000
US_PER_S: Final = 1_000_000
#: "until_edited": a claim never goes stale on its own (a newer claim replaces it).
UNTIL_EDITED: Final = 2**62

_UNITS: Final = {
    "us": 1,
    "ms": US_PER_MS,
    "s": US_PER_S,
    "m": 60 * US_PER_S,
    "h": 3600 * US_PER_S,
    "d": 86400 * US_PER_S,
}
_PATTERN: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)\s*$")


def parse_duration(raw: object) -> int:
    """Parse `500ms`, `60s`, `5m`, `24h`, `2d` or `until_edited`; a bare number means seconds."""
    if isinstance(raw, bool):
        raise ValueError(f"expected a duration such as 60s or 5m, got {raw!r}")
    if isinstance(raw, int | float):
        if raw < 0:
            raise ValueError(f"a duration cannot be negative, got {raw!r}")
        return round(raw * US_PER_S)
    if not isinstance(raw, str):
        raise ValueError(f"expected a duration such as 60s or 5m, got {raw!r}")
    if raw.strip() == "until_edited":
        return UNTIL_EDITED
    match = _PATTERN.match(raw)
    if match is None:
        raise ValueError(
            f"{raw!r} is not a duration: write a number and a unit (ms, s, m, h, d), "
            "e.g. 500ms or 5m"
        )
    return round(float(match.group(1)) * _UNITS[match.group(2)])


def format_duration(us: int) -> str:
    """Render microseconds back in the largest unit that divides them exactly."""
    if us >= UNTIL_EDITED:
        return "until_edited"
    for unit in ("d", "h", "m", "s", "ms"):
        if us and us % _UNITS[unit] == 0:
            return f"{us // _UNITS[unit]}{unit}"
    return f"{us}us"


_DURATION_SCHEMA: Final = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(us|ms|s|m|h|d)\s*$"},
        {"type": "number", "minimum": 0},
    ],
    "description": "a duration: 500ms, 60s, 5m, 24h, 2d (a bare number is seconds)",
}

#: A policy duration, held in microseconds.
Duration = Annotated[
    int,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(_DURATION_SCHEMA),
]

#: A freshness budget: a duration or `until_edited`.
Freshness = Annotated[
    int,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [*_DURATION_SCHEMA["anyOf"], {"const": "until_edited"}],
            "description": "a duration, or until_edited (never stale on its own)",
        }
    ),
]
