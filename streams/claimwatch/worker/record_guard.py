"""The per-record guard: the one place an agent handles its records in; nothing leaves it.

Faust acks a batch's records together; an exception out of an agent loses the rest of the
batch while the offsets move on. So each record is handled inside `RecordGuard.run`: when
handling it raises, the record goes to the DLQ with its bytes, origin and the reason
`internal_error: <type>: <message>`, the error is counted and logged once with its
traceback, the agent's per-partition state is reset (`reset`), and the next record goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from claimwatch.wire.topics import TopicNames
from claimwatch.worker.dead_letters import dead_letter, internal_error_reason
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics, dlq_reason_label
from claimwatch.worker.outgoing import Send

log = logging.getLogger(__name__)


class RecordGuard:
    """Runs one record's handling; turns whatever it raises into a dead letter."""

    def __init__(self, names: TopicNames, send: Send, metrics: Metrics) -> None:
        self.names = names
        self.send = send
        self.metrics = metrics

    async def run(
        self,
        record: Record,
        handle: Callable[[Record], Awaitable[None]],
        reset: Callable[[int], None] | None = None,
    ) -> bool:
        """Handle `record`; False when it failed and was dead-lettered instead."""
        try:
            await handle(record)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.failed(record, exc, reset)
            return False
        return True

    async def settle(self, topic: str, work: Callable[[], Awaitable[None]]) -> None:
        """Run work that belongs to no one record (the end of a batch); it never raises.

        What it raises is logged and counted as an internal error of the input `topic`;
        the records it follows were handled already.
        """
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the end of a batch of %s raised; the agent goes on", topic)
            self.metrics.internal_errors.labels(topic).inc()

    async def failed(
        self, record: Record, exc: BaseException, reset: Callable[[int], None] | None
    ) -> None:
        """Dead-letter a record whose handling raised, count and log it, reset the state."""
        log.error(
            "handling %s[%d]@%d raised; the record goes to the DLQ as internal_error",
            record.topic,
            record.partition,
            record.offset,
            exc_info=exc,
        )
        self.metrics.internal_errors.labels(record.topic).inc()
        if reset is not None:
            try:
                reset(record.partition)
            except Exception:
                log.exception("resetting partition %d after an error failed", record.partition)
        reason = internal_error_reason(exc)
        origin = (record.topic, record.partition, record.offset)
        out = dead_letter(self.names, origin, record.key, record.value or b"", reason)
        try:
            await self.send(out)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "could not dead-letter %s[%d]@%d (%s)",
                record.topic,
                record.partition,
                record.offset,
                reason,
            )
            return
        self.metrics.dead_letters.labels(dlq_reason_label(reason)).inc()
