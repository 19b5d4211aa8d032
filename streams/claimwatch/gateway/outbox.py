"""Claims the gateway could not hand to the broker, kept in memory until it answers again.

Bounded: a full outbox refuses the next claim (the caller reports it as dropped) rather
than growing without end while the broker is away. Claims leave in the order they came
(`drain`, shared by the claims of the result hook and the verdict signals of governance).
Sending is at least once: a claim whose sending was cut short may already be on the
topic, and its second copy is the same claim (same id, same content), which a worker
counts as a duplicate and does not weigh twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

log = logging.getLogger(__name__)

#: Claims kept at most while the broker does not answer.
DEFAULT_OUTBOX_SIZE: Final = 1000


@dataclass(frozen=True, slots=True)
class Pending:
    """One claim as the publisher sends it: its key and its JSON value (validated, signed)."""

    claim_id: str
    key: bytes
    value: bytes


class Outbox:
    """A bounded first-in first-out queue of claims waiting for the broker."""

    def __init__(self, size: int = DEFAULT_OUTBOX_SIZE) -> None:
        if size < 1:
            raise ValueError(f"an outbox holds at least 1 claim, not {size}")
        self.size = size
        self._claims: deque[Pending] = deque()
        #: claims refused because the outbox was full, since it was made
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._claims)

    def put(self, claim: Pending) -> bool:
        """Keep `claim`; False (and counted as dropped) when the outbox is full."""
        if len(self._claims) >= self.size:
            self.dropped += 1
            return False
        self._claims.append(claim)
        return True

    def peek(self) -> Pending | None:
        """The oldest claim, left in place (it leaves with `done` once sent)."""
        return self._claims[0] if self._claims else None

    def done(self) -> None:
        """The oldest claim was sent: forget it."""
        self._claims.popleft()


async def drain(
    outbox: Outbox,
    send: Callable[[Pending], Awaitable[None]],
    *,
    retry_s: float,
    timeout_s: float,
) -> None:
    """Send the outbox, oldest first, retrying every `retry_s` while the broker is away.

    `send` hands one record to the broker and waits for it to take it; one try may take
    `timeout_s` at most. Returns when the outbox is empty; any failure keeps the record
    and tries it again (the first failure and the recovery are logged).
    """
    failures = 0
    while (pending := outbox.peek()) is not None:
        try:
            async with asyncio.timeout(timeout_s):
                await send(pending)
        except Exception as exc:  # any broker trouble: kept, tried again
            if failures == 0:
                log.warning(
                    "claimwatch gateway: %d record(s) waiting for the broker: %s",
                    len(outbox),
                    exc or type(exc).__name__,
                )
            failures += 1
            await asyncio.sleep(retry_s)
            continue
        outbox.done()
    if failures:
        log.warning("claimwatch gateway: the broker answers again; the outbox is sent")


class Courier:
    """An outbox and the task that sends it while the broker is away.

    `keep` queues a record and makes sure a task drains the outbox (oldest first, every
    `retry_s` until the broker takes it); `stop` ends that task and logs what is left.
    """

    def __init__(
        self,
        send: Callable[[Pending], Awaitable[None]],
        *,
        name: str,
        retry_s: float,
        timeout_s: float,
        outbox: Outbox | None = None,
    ) -> None:
        self.outbox = outbox if outbox is not None else Outbox()
        self._send, self._name = send, name
        self._retry_s, self._timeout_s = retry_s, timeout_s
        self._drainer: asyncio.Task[None] | None = None

    def keep(self, pending: Pending) -> bool:
        """Queue `pending` to be sent; False when the outbox is full (it is dropped)."""
        kept = self.outbox.put(pending)
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(
                drain(self.outbox, self._send, retry_s=self._retry_s, timeout_s=self._timeout_s),
                name=self._name,
            )
        return kept

    async def stop(self, what: str) -> None:
        """Stop sending; the records left (`what`, e.g. "claim(s)") are logged as lost."""
        if self._drainer is not None:
            self._drainer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drainer
            self._drainer = None
        if len(self.outbox):
            log.error("claimwatch gateway: %d %s never sent (no broker)", len(self.outbox), what)
