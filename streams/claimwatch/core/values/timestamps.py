"""timestamp values: RFC 3339 with an offset, as integer UTC microseconds."""

from __future__ import annotations

import re
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from pydantic import JsonValue

from claimwatch.core.values.base import NormalizationError, _Base, _describe
from claimwatch.models.policy import FieldPolicy

_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US_PER_S: Final = 1_000_000


class _TimestampNormalizer(_Base):
    """timestamp: RFC 3339 with an offset -> integer microseconds since the epoch (UTC)."""

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self._zones: dict[int, timezone] = {0: UTC}

    def _zone(self, minutes: int) -> timezone:
        zone = self._zones.get(minutes)
        if zone is None:
            zone = timezone(timedelta(minutes=minutes))
            if len(self._zones) < 256:
                self._zones[minutes] = zone
        return zone

    def _canon(self, value: object) -> Hashable:
        if isinstance(value, datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                raise NormalizationError(
                    f"timestamp has no UTC offset: expected e.g. 2026-09-14T09:12:03Z, "
                    f"got {value.isoformat()!r}"
                )
            return _micros(value)
        if not isinstance(value, str):
            raise NormalizationError(
                f"expected an RFC 3339 timestamp string such as 2026-09-14T09:12:03Z, "
                f"got {_describe(value)}"
            )
        match = _RFC3339.fullmatch(value.strip())
        if match is None:
            try:
                naive = datetime.fromisoformat(value.strip()).tzinfo is None
            except ValueError:
                naive = False
            if naive:
                raise NormalizationError(
                    f"timestamp has no UTC offset: expected e.g. 2026-09-14T09:12:03Z or "
                    f"+02:00 at the end, got {_describe(value)}"
                )
            raise NormalizationError(
                f"expected an RFC 3339 timestamp such as 2026-09-14T09:12:03Z, "
                f"got {_describe(value)}"
            )
        year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = match.groups()
        if second == "60":
            raise NormalizationError(
                f"leap seconds are not supported: expected seconds 00-59, got {_describe(value)}"
            )
        if zulu:
            zone = UTC
        else:
            if int(off_h) > 23 or int(off_m) > 59:
                raise NormalizationError(
                    f"expected a UTC offset between -23:59 and +23:59, got {_describe(value)}"
                )
            minutes = int(off_h) * 60 + int(off_m)
            zone = self._zone(-minutes if sign == "-" else minutes)
        micro = int((frac or "0")[:6].ljust(6, "0"))  # finer than microseconds: truncated
        try:
            stamp = datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second), micro, zone
            )
        except ValueError as exc:
            raise NormalizationError(
                f"expected a valid date and time, got {_describe(value)} ({exc})"
            ) from None
        return _micros(stamp)

    def _render(self, canon: Hashable) -> JsonValue:
        micros: int = canon  # type: ignore[assignment]
        s = _EPOCH + timedelta(microseconds=micros)
        text = f"{s.year:04d}-{s.month:02d}-{s.day:02d}T{s.hour:02d}:{s.minute:02d}:{s.second:02d}"
        if s.microsecond:
            if s.microsecond % 1000 == 0:
                text += f".{s.microsecond // 1000:03d}"
            else:
                text += f".{s.microsecond:06d}"
        return text + "Z"


def _micros(stamp: datetime) -> int:
    """Microseconds since the epoch; the instant must be representable in UTC (years 1-9999)."""
    try:
        stamp.astimezone(UTC)
    except OverflowError:
        raise NormalizationError(
            f"expected a timestamp between years 0001 and 9999 in UTC, got {stamp.isoformat()!r}"
        ) from None
    delta = stamp - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * _US_PER_S + delta.microseconds
