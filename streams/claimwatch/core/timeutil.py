"""RFC 3339 timestamps to and from integer microseconds since the epoch (UTC), without a clock."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from typing import Final

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE: Final = datetime(1970, 1, 1)
#: A time whose second is 60 (a leap second): the part before the seconds, the minute, an
#: optional fraction and the offset (its range is checked by the ordinary parse).
_LEAP_SECOND: Final = re.compile(
    r"(?P<head>\d{4}-\d{2}-\d{2}[Tt ]\d{2}:(?P<minute>\d{2}):)60(?:[.,]\d+)?"
    r"(?P<offset>(?:[Zz]|[+-]\d{2}:\d{2})?)"
)
#: Where a leap second lands: the last microsecond of second 59 of the same minute.
_LEAP_SECOND_AS: Final = "59.999999"


class TimestampError(ValueError):
    """A time that is missing, unparseable or has no UTC offset."""


def parse_rfc3339(raw: object) -> int:
    """Parse an RFC 3339 time with an offset into microseconds since the epoch.

    A leap second (second 60, which RFC 3339 allows at minute 59 of the local time) is
    accepted and read as the last microsecond of second 59 of that minute:
    `2016-12-31T23:59:60Z` and `2016-12-31T23:59:60.5Z` are both `2016-12-31T23:59:59.999999Z`.
    POSIX time has no leap seconds; this keeps the instant on its own minute and day and
    never before second 59 or after the next minute begins. Second 61 is refused.
    """
    if not isinstance(raw, str):
        raise TimestampError(f"expected an RFC 3339 time string, got {type(raw).__name__}")
    text = raw
    # the pattern can only match where ":60" is (most times have none: no regex run)
    leap = _LEAP_SECOND.fullmatch(raw) if ":60" in raw else None
    if leap is not None:
        if leap["minute"] != "59":
            raise TimestampError(f"{raw!r}: second 60 (a leap second) is only valid at minute 59")
        text = leap["head"] + _LEAP_SECOND_AS + leap["offset"]
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise TimestampError(f"{raw!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise TimestampError(f"{raw!r} has no UTC offset (write Z or +hh:mm)")
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@functools.lru_cache(maxsize=65_536)
def format_rfc3339(us: int) -> str:
    """Render microseconds since the epoch as RFC 3339 UTC ('Z'), fractions only when present.

    Cached: a fact's claim times are rendered again in every decision of the fact. Times
    that are not (a decision's `decided_at`, a window's deadline) share the rendering of
    their whole second with their neighbours.
    """
    seconds, fraction = divmod(us, 1_000_000)
    head = _second_text(seconds)
    if fraction == 0:
        return head + "Z"
    if fraction % 1000 == 0:
        return f"{head}.{fraction // 1000:03d}Z"
    return f"{head}.{fraction:06d}Z"


@functools.lru_cache(maxsize=4_096)
def _second_text(seconds: int) -> str:
    """A whole second since the epoch as `YYYY-MM-DDTHH:MM:SS` (UTC)."""
    return (_EPOCH_NAIVE + timedelta(seconds=seconds)).isoformat(timespec="seconds")


#: Length of a canonical rendering by its fraction: none, milliseconds, microseconds.
_CANONICAL_LENGTHS: Final = (20, 24, 27)


def as_rfc3339(raw: object, us: int) -> str:
    """`raw` when it already is `format_rfc3339(us)`, else that rendering.

    `raw` must be the text `us` was parsed from: once it parsed to `us`, a UTC text of the
    canonical length, `T` and `.` in place, can only be the canonical text (the digits are
    fixed by the instant). Producers mostly send canonical times; they are kept as sent.
    """
    if type(raw) is str and raw[-1:] == "Z" and raw[10:11] == "T":
        fraction = us % 1_000_000
        size = _CANONICAL_LENGTHS[0 if fraction == 0 else 1 if fraction % 1000 == 0 else 2]
        if len(raw) == size and (size == 20 or raw[19] == "."):
            return raw
    return format_rfc3339(us)
