"""json values: any JSON value, as its canonical text (sorted keys, no spaces), bounded."""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping

from pydantic import JsonValue

from claimwatch.core.limits import MAX_NESTING, number_problem
from claimwatch.core.values.base import NormalizationError, _Base, _describe


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
