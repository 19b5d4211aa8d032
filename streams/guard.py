"""The per-record guard every agent handles its records in: no exception ever leaves it.

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
from dataclasses import dataclass

from streams.metrics import Metrics, dlq_reason_label
from streams.runtime import Outgoing, dead_letter
from streams.topics import TopicNames

log = logging.getLogger(__name__)

Send = Callable[[Outgoing], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Record:
    """One input record as an agent read it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    #: the record's timestamp in microseconds (broker time on LogAppendTime topics)
    timestamp_us: int | None = None


def record_of(event: object) -> Record:
    """The Record of a Faust event (its message's coordinates and the raw value)."""
    message = event.message  # type: ignore[attr-defined]
    stamp = message.timestamp
    return Record(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=message.key,
        value=event.value,  # type: ignore[attr-defined]
        timestamp_us=int(stamp * 1000) * 1000 if stamp else None,
    )


def internal_error_reason(exc: BaseException) -> str:
    """The DLQ reason of a record whose handling raised `exc`."""
    return f"internal_error: {type(exc).__name__}: {exc}"


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
