"""A bound on the records sent but not yet acknowledged: the agent waits when the producer lags.

Faust commits offsets only after flushing the producer, and a flush waits for every
record in flight — including those added while it waits. An agent that sends faster
than the broker acknowledges (a backlog being drained) makes each commit wait longer,
until commits stall for many seconds. `InFlight` makes the sender wait instead, once
more than `limit` records are unacknowledged, until half of them are.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

log = logging.getLogger(__name__)

#: Records in flight before a sender waits (about a second of the producer's throughput).
DEFAULT_LIMIT = 5_000


class InFlight:
    """The futures of sent records, oldest first; `admit` waits while there are too many."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._pending: collections.deque[asyncio.Future[Any]] = collections.deque()
        #: how often a sender had to wait (for the benchmarks and tests)
        self.waits = 0
        self.failures = 0

    def __len__(self) -> int:
        self._forget_done()
        return len(self._pending)

    async def admit(self, future: asyncio.Future[Any]) -> None:
        """Track one sent record; wait while more than `limit` are unacknowledged."""
        future.add_done_callback(self._note)
        self._pending.append(future)
        if len(self._pending) <= self.limit:
            return
        self._forget_done()
        if len(self._pending) <= self.limit:
            return
        self.waits += 1
        while len(self._pending) > self.limit // 2:
            await asyncio.wait([self._pending[0]])
            self._forget_done()

    def _forget_done(self) -> None:
        pending = self._pending
        while pending and pending[0].done():
            pending.popleft()

    def _note(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            self.failures += 1
            log.error("a record the worker sent was not acknowledged: %r", error)
