"""Recording a phase's verdict: its signals to `<prefix>verdicts`, or to the outbox.

The decision never waits on Kafka beyond `record_timeout`: the gateway has already
decided (locally, with the worker's code). Signals the broker did not take in time are
kept in a bounded outbox and sent, oldest first, once it answers (`outbox.drain`); the
worker then decides the request with the same id. What became of them is the note's
`recorded`: `sent`, `queued`, `dropped` (the outbox was full: logged at error level), or
`none` (no check argued, so there is no signal to send and the worker never hears of the
request; the note and the log are its only record).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final, Literal

from claimwatch.client.verdicts import VerdictPublisher, encoded
from claimwatch.gateway.outbox import Outbox, Pending, drain, stop_draining
from claimwatch.models.verdict import VerdictSignal

log = logging.getLogger(__name__)

Recorded = Literal["sent", "queued", "dropped", "none"]
#: Seconds between two tries to hand the outbox to the broker while it does not answer.
RETRY_S: Final = 1.0
#: The longest one try to send an outbox signal may take (seconds).
SEND_TIMEOUT_S: Final = 10.0

#: Makes the (unopened) publisher; tests give a fake.
PublisherFactory = Callable[[], VerdictPublisher]


class VerdictRecorder:
    """Sends each phase's signals within a bound; keeps what the broker did not take."""

    def __init__(
        self,
        publisher_factory: PublisherFactory,
        *,
        timeout_s: float = 1.0,
        outbox: Outbox | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.outbox = outbox if outbox is not None else Outbox()
        self._factory = publisher_factory
        self._publisher: VerdictPublisher | None = None
        self._opening = asyncio.Lock()
        self._drainer: asyncio.Task[None] | None = None

    async def record(self, signals: Sequence[VerdictSignal]) -> Recorded:
        """Send `signals` (all at once) and say what became of them."""
        if not signals:
            return "none"
        pending = [Pending(f"{s.request_id}/{s.check}", *encoded(s)) for s in signals]
        if len(self.outbox):  # the broker did not answer last time: keep the order
            return self._queue(pending)
        try:
            async with asyncio.timeout(self.timeout_s):
                publisher = await self._connected()
                await asyncio.gather(*(publisher.send_record(p.key, p.value) for p in pending))
        except Exception as exc:  # the broker: unreachable, the topic missing, too slow
            log.warning(
                "claimwatch gateway: verdict signals of %s not sent: %s",
                signals[0].request_id,
                exc or type(exc).__name__,
            )
            return self._queue(pending)  # at least once: a copy the broker took is the same
        return "sent"

    async def aclose(self) -> None:
        """Stop sending the outbox (what is left is logged) and close the publisher."""
        await stop_draining(self._drainer)
        self._drainer = None
        if len(self.outbox):
            log.error(
                "claimwatch gateway: %d verdict signal(s) never sent (no broker)", len(self.outbox)
            )
        if self._publisher is not None:
            publisher, self._publisher = self._publisher, None
            await publisher.__aexit__(None, None, None)

    async def _connected(self) -> VerdictPublisher:
        """The one publisher, opened on first use (and again after an open that failed)."""
        async with self._opening:
            if self._publisher is None:
                publisher = self._factory()
                await publisher.__aenter__()
                self._publisher = publisher
            return self._publisher

    async def _send(self, pending: Pending) -> None:
        publisher = await self._connected()
        await publisher.send_record(pending.key, pending.value)

    def _queue(self, pending: Sequence[Pending]) -> Recorded:
        """Keep the signals for the broker; `dropped` when the outbox cannot take them all."""
        kept = [self.outbox.put(p) for p in pending]
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(
                drain(self.outbox, self._send, retry_s=RETRY_S, timeout_s=SEND_TIMEOUT_S),
                name="claimwatch-verdicts-outbox",
            )
        if not all(kept):
            log.error(
                "claimwatch gateway: outbox full (%d signals): verdict signals of %s dropped",
                self.outbox.size,
                pending[0].claim_id.rsplit("/", 1)[0],
            )
            return "dropped"
        return "queued"
