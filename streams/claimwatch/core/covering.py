"""Whether a decision covers given claims: the question an agent waiting for its answer asks.

A decision covers a claim when the claim is one of the decision's `claims`, whatever became
of it (won, outranked, stale, rejected...): the decision was made with that claim in view.
The query parameters of `GET /facts/{subject}/{field}?covering=...&wait=...` are read here
too, so that the worker, the SDK and the CLI read them alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

#: The longest a request may wait for a covering decision (seconds).
MAX_WAIT_S: Final = 30.0
#: The most claim ids one request may list, and the longest id.
MAX_IDS: Final = 256
MAX_ID_CHARS: Final = 256


class QueryError(ValueError):
    """A `covering` or `wait` parameter that cannot be used; the message says why."""


def covering_ids(text: str | None) -> tuple[str, ...] | None:
    """The claim ids of a `covering` parameter (comma-separated), in order, without repeats.

    None when the parameter is absent; a QueryError when it lists no id or too many.
    """
    if text is None:
        return None
    ids = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not ids:
        raise QueryError("`covering` lists no claim id (give one or more, comma-separated)")
    if len(ids) > MAX_IDS:
        raise QueryError(f"`covering` lists {len(ids)} claim ids; at most {MAX_IDS} per request")
    for claim_id in ids:
        if len(claim_id) > MAX_ID_CHARS or not claim_id.isprintable():
            shown = repr(claim_id[:40])
            raise QueryError(f"`covering`: {shown} is no claim id (printable, at most 256 chars)")
    return ids


def wait_seconds(text: str | None) -> float:
    """The seconds of a `wait` parameter: 0 when absent, at most `MAX_WAIT_S`."""
    if text is None or not text.strip():
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        raise QueryError(f"`wait` must be a number of seconds, got {text[:40]!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise QueryError(f"`wait` must be between 0 and {MAX_WAIT_S:g} seconds, got {text[:40]}")
    return min(seconds, MAX_WAIT_S)


def claim_ids(decision: Mapping[str, Any]) -> set[str]:
    """The ids of the claims a decision lists."""
    return {str(c.get("claim_id")) for c in decision.get("claims") or () if isinstance(c, Mapping)}


def missing(decision: Mapping[str, Any] | None, ids: Iterable[str]) -> list[str]:
    """The ids, in their order, that the decision (None: no decision yet) does not list."""
    listed = claim_ids(decision) if decision is not None else set()
    return [i for i in ids if i not in listed]


def covers(decision: Mapping[str, Any] | None, ids: Iterable[str]) -> bool:
    """Whether there is a decision and it lists every one of the ids."""
    return decision is not None and not missing(decision, ids)
