"""Faust's per-partition stream checks, one line per kind and minute instead of a paragraph each.

Faust's consumer thread (logger `faust.transport.drivers.aiokafka`) checks every assigned
partition about once a second and, while a partition is assigned but its stream has not
taken a record yet (the minutes of a rebalance or a recovery), logs an ERROR of about 20
lines per partition: "Stream has not started processing ...", then the same explanation
of possible causes each time. During one rebalance that filled a worker's log with 487
such paragraphs in 7 minutes. The filter keeps the first line of each such message, lets
one message of each kind through per window, and counts the ones it held back in the next
one it lets through. Every other record passes unchanged. /health, not this log, says
whether the worker is processing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

#: The logger Faust's consumer thread logs its stream checks with.
FAUST_CONSUMER_LOGGER: Final = "faust.transport.drivers.aiokafka"
#: Seconds in which one message of each kind is let through.
WINDOW_S: Final = 60.0
#: The explanation Faust appends to each slow-processing message (dropped).
_EXPLAINED: Final = "There are multiple possible explanations"
#: Per-partition messages whose text embeds the partition (grouped by this start).
_PER_PARTITION: Final = ("No active partitions for ",)


def _kind(message: str) -> str | None:
    """The kind of a message this filter quiets, else None."""
    if _EXPLAINED in message:
        return message.split("\n", 1)[0].strip()
    for start in _PER_PARTITION:
        if start in message:
            return start
    return None


class RepeatsInOneLine(logging.Filter):
    """Faust's stream-check messages: first line only, one per kind per window, counted."""

    def __init__(
        self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.window_s = window_s
        self.clock = clock
        #: per kind: when one was last let through, and how many were held back since
        self._seen: dict[str, tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            return True
        kind = _kind(record.msg)
        if kind is None:
            return True
        now = self.clock()
        line = record.msg.split("\n", 1)[0].rstrip()
        if kind in self._seen:
            shown, held = self._seen[kind]
            if now - shown < self.window_s:
                self._seen[kind] = (shown, held + 1)
                return False
            if held:
                line += f" [{held} more like it in the last {now - shown:.0f} s not shown]"
        self._seen[kind] = (now, 0)
        record.msg = line
        return True


def quiet_faust_checks() -> RepeatsInOneLine:
    """Install the filter on Faust's consumer logger (once) and return it."""
    logger = logging.getLogger(FAUST_CONSUMER_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, RepeatsInOneLine):
            return existing
    installed = RepeatsInOneLine()
    logger.addFilter(installed)
    return installed
