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
from claimwatch.gateway.opened import OpenedOnUse
from claimwatch.gateway.outbox import Courier, Outbox, Pending
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
        self._publisher = OpenedOnUse(publisher_factory)
        self.courier = Courier(
            self._send,
            name="claimwatch-verdicts-outbox",
            retry_s=RETRY_S,
            timeout_s=SEND_TIMEOUT_S,
            outbox=outbox,
        )

    @property
    def outbox(self) -> Outbox:
        """The signals waiting for the broker."""
        return self.courier.outbox

    async def record(self, signals: Sequence[VerdictSignal]) -> Recorded:
        """Send `signals` (all at once) and say what became of them."""
        if not signals:
            return "none"
        pending = [Pending(f"{s.request_id}/{s.check}", *encoded(s)) for s in signals]
        if len(self.outbox):  # the broker did not answer last time: keep the order
            return self._queue(pending)
        try:
            async with asyncio.timeout(self.timeout_s):
                publisher = await self._publisher.get()
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
        await self.courier.stop("verdict signal(s)")
        await self._publisher.close()

    async def _send(self, pending: Pending) -> None:
        publisher = await self._publisher.get()
        await publisher.send_record(pending.key, pending.value)

    def _queue(self, pending: Sequence[Pending]) -> Recorded:
        """Keep the signals for the broker; `dropped` when the outbox cannot take them all."""
        if not all([self.courier.keep(p) for p in pending]):
            log.error(
                "claimwatch gateway: outbox full (%d signals): verdict signals of %s dropped",
                self.outbox.size,
                pending[0].claim_id.rsplit("/", 1)[0],
            )
            return "dropped"
        return "queued"
