"""Tick records, which move a partition's clock, and the latest record time a worker trusts."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from claimwatch.wire.codec import dumps, loads

#: Key of tick records (in the claims and verdicts topics).
TICK_KEY: Final = b"__tick__"

#: Largest tick time accepted (int64 microseconds).
MAX_TICK_US: Final = 2**63 - 1


def tick_value(at_us: int) -> bytes:
    """The value of a tick record: the partition clock may move to `at_us`."""
    return dumps({"__tick__": at_us})


def tick_at(now_ns: int, lateness_s: float) -> int:
    """The time a worker's tick written at wall time `now_ns` carries: now minus the lateness.

    In whole milliseconds, rounded down, as the broker stamps records: a tick's time is
    bounded by its broker time minus the lateness (`LogAppendTime`, in milliseconds), and
    a time in microseconds could lie up to a millisecond past that bound, so a worker's
    own tick would at times be counted `bad_tick`.
    """
    return (now_ns // 1_000_000 - math.ceil(lateness_s * 1000)) * 1000


def tick_time(value: bytes) -> int | None:
    """The time of a well-formed tick record, or None for anything else.

    Well formed: a JSON object with the single key `__tick__` holding a whole number of
    microseconds in 0 .. 2**63-1. Ticks can be written by anyone, so nothing else is trusted.
    """
    try:
        data = loads(value)
    except ValueError:  # not JSON, or a number orjson cannot hold
        return None
    if not isinstance(data, dict) or len(data) != 1:
        return None
    at = data.get("__tick__")
    return at if type(at) is int and 0 <= at <= MAX_TICK_US else None


def trusted_until(wall_clock_us: Callable[[], int] | None, skew_us: int) -> int | None:
    """The latest record time a worker trusts now: its wall clock plus the policy's skew.

    None without a wall clock (replay and tests take record times as they are). Every
    input that moves a clock (claims, ticks, verdict signals) is held to it.
    """
    return None if wall_clock_us is None else wall_clock_us() + skew_us
