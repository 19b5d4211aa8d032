"""A record the producer refuses is dropped, logged, counted and noted: the process goes on.

Faust writes a table's changelog through a buffer: `Table.__setitem__` → `send_soon` →
`ProducerBuffer.put`, and the buffer's service task (`_handle_pending`) publishes each
record. When the producer refuses one (a record over `producer_max_request_size`, 1 MB:
aiokafka's MessageSizeTooLargeError, wrapped in Faust's ProducerSendError), the exception
ends that task outside every agent; mode then crashes the buffer, the producer and the
app, and the worker exits — and after a restart the same input does it again.

The guard is handed each refusal through `claimwatch.worker.faust_private`
(`on_buffer_refusal`), the one module that touches the buffer's private API.

What a refusal does: an error log line (topic, partition, key, size, reason), one more
`claimwatch_producer_errors_total{topic}`, and a note on the dead-letter topic (the record
truncated as every DLQ copy is, and cut to fit the producer's own limit, reason
`producer_refused: <type>: <message>`). A refused
table write stays in the local store but not in its changelog: the next write of the key
(or a restart that rebuilds the store from the changelog) settles it; every feature
bounds what it stores below the limit, so this is the last line, not the design.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from dataclasses import dataclass
from typing import Any, Final

from claimwatch.wire.topics import TopicNames
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.faust_private import on_buffer_refusal
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.settings import DEFAULT_PRODUCER_MAX_REQUEST_BYTES

log = logging.getLogger(__name__)

#: Longest key quoted in a log line.
_KEY_CHARS = 80
#: Room kept below the producer's limit for a note's headers and the record framing.
NOTE_HEADROOM: Final = 16 * 1024


@dataclass(frozen=True, slots=True)
class ProducerGuard:
    """What a refusal is reported to: the app's metrics and its DLQ topic."""

    app: Any
    names: TopicNames
    metrics: Metrics

    async def refused(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        exc: Exception,
    ) -> None:
        """Log, count and dead-letter a note of one record the producer refused. Never raises."""
        reason = f"producer_refused: {type(exc).__name__}: {exc}"
        size = len(key or b"") + len(value or b"")
        log.error(
            "the producer refused a record of %s[%s] (key %r, %d bytes): %s; it is dropped",
            topic,
            partition,
            (key or b"")[:_KEY_CHARS],
            size,
            reason,
        )
        try:
            self.metrics.producer_errors.labels(topic).inc()
        except Exception:  # a metrics failure must not undo the guard
            log.exception("counting a refused record failed")
        if topic == self.names.dlq:
            return  # a refused note is not noted again
        origin = (topic, partition if partition is not None else -1, -1)
        note = dead_letter(self.names, origin, key, value or b"", reason)
        note = within(note, request_limit(self.app) - NOTE_HEADROOM)
        try:
            await self.app.producer.send(
                note.topic, note.key, note.value, note.partition, None, list(note.headers)
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the DLQ note of a refused record of %s could not be sent", topic)


def request_limit(app: Any) -> int:
    """The largest record the app's producer sends (Faust's `producer_max_request_size`)."""
    try:
        return int(app.conf.producer_max_request_size)
    except (AttributeError, TypeError, ValueError):
        return DEFAULT_PRODUCER_MAX_REQUEST_BYTES


def within(note: Outgoing, room: int) -> Outgoing:
    """`note` with its key and value cut to `room` bytes in all, when larger.

    A note of a refused record is about as large as the record: under a producer limit
    below the DLQ's own bound (`CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES`) it would be refused
    too. Its headers then say it was cut, and the original's size and digest.
    """
    size = len(note.key or b"") + len(note.value)
    if size <= room:
        return note
    key, extra = note.key, []
    if "claimwatch.truncated" not in dict(note.headers):
        extra += [
            ("claimwatch.truncated", b"true"),
            ("claimwatch.original_size", str(len(note.value)).encode()),
            ("claimwatch.original_sha256", hashlib.sha256(note.value).hexdigest().encode()),
        ]
    if key is not None and len(key) > room // 2:
        extra.append(("claimwatch.original_key_size", str(len(key)).encode()))
        key = key[: room // 2]
    value = note.value[: room - len(key or b"")]
    return Outgoing(note.topic, key, value, note.partition, (*note.headers, *extra))


#: The guard of each app that installed one (weak: a test's apps come and go).
_GUARDS: weakref.WeakKeyDictionary[Any, ProducerGuard] = weakref.WeakKeyDictionary()


def install_producer_guard(app: Any, names: TopicNames, metrics: Metrics) -> ProducerGuard:
    """Report (instead of crashing on) what the app's producer refuses; the guard."""
    guard = ProducerGuard(app, names, metrics)
    _GUARDS[app] = guard
    on_buffer_refusal(app, guard.refused)
    return guard


def guard_of(app: Any) -> ProducerGuard | None:
    """The guard an app installed, if any (for send paths outside the buffer)."""
    try:
        return _GUARDS.get(app)
    except TypeError:  # None, or an object that cannot be weakly referenced
        return None
