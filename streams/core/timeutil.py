"""RFC 3339 timestamps to and from integer microseconds since the epoch (UTC), without a clock."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Final

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE: Final = datetime(1970, 1, 1)


class TimestampError(ValueError):
    """A time that is missing, unparseable or has no UTC offset."""


def parse_rfc3339(raw: object) -> int:
    """Parse an RFC 3339 time with an offset into microseconds since the epoch."""
    if not isinstance(raw, str):
        raise TimestampError(f"expected an RFC 3339 time string, got {type(raw).__name__}")
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise TimestampError(f"{raw!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise TimestampError(f"{raw!r} has no UTC offset (write Z or +hh:mm)")
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@functools.lru_cache(maxsize=65_536)
def format_rfc3339(us: int) -> str:
    """Render microseconds since the epoch as RFC 3339 UTC ('Z'), fractions only when present.

    Cached: a fact's claim times are rendered again in every decision of the fact.
    """
    moment = _EPOCH_NAIVE + timedelta(microseconds=us)
    fraction = moment.microsecond
    if fraction == 0:
        return moment.isoformat(timespec="seconds") + "Z"
    if fraction % 1000 == 0:
        return moment.isoformat(timespec="milliseconds") + "Z"
    return moment.isoformat(timespec="microseconds") + "Z"
