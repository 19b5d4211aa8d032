"""The edge kit every feature's edge shares: records in and out, dead letters, ticks, the guard.

The per-record guard is the one place an agent handles its records in: no exception ever
leaves it. Faust acks a batch's records together; an exception out of an agent loses the
rest of the batch while the offsets move on. So each record is handled inside
`RecordGuard.run`: when handling it raises, the record goes to the DLQ with its bytes,
origin and the reason `internal_error: <type>: <message>`, the error is counted and logged
once with its traceback, the agent's per-partition state is reset (`reset`), and the next
record goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from claimwatch.wire.codec import DecodeError, dumps, loads
from claimwatch.wire.topics import TopicNames, misplaced
from claimwatch.worker.metrics import Metrics, dlq_reason_label

#: Key of tick records (in the claims and verdicts topics).
TICK_KEY: Final = b"__tick__"

#: Largest tick time accepted (int64 microseconds).
MAX_TICK_US: Final = 2**63 - 1


@dataclass(slots=True)
class Outgoing:
    """One record to send. Never changed once made.

    Not declared frozen: every record sent would pay for it (a frozen dataclass sets each
    field through `object.__setattr__`, about 0.5 µs more per record; see `Claim`).
    """

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None
    headers: tuple[tuple[str, bytes], ...] = ()


def tick_value(at_us: int) -> bytes:
    """The value of a tick record: the partition clock may move to `at_us`."""
    return dumps({"__tick__": at_us})


def tick_at(now_ns: int, lateness_s: float) -> int:
    """The time a worker's tick written at wall time `now_ns` carries: now minus the lateness.

    In whole milliseconds, rounded down, as the broker stamps records: a tick's time is
    bounded by its broker time minus the lateness (`LogAppendTime`, in milliseconds), and
    a time in microseconds could lie up to 999 µs past that bound, so a worker's own tick
    was counted `bad_tick` now and then (1 of about 240 in one run).
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


#: Largest DLQ copy (key plus value) sent whole: below the producer's request limit
#: (Faust's producer_max_request_size, 1,000,000 bytes) with room for headers and framing.
DLQ_MAX_BYTES: Final = 1_000_000 - 64 * 1024
#: Longest reason header kept (an exception message can quote a whole value).
MAX_REASON_CHARS: Final = 2_000


def dead_letter(
    names: TopicNames,
    origin: tuple[str, int, int],
    key: bytes | None,
    value: bytes,
    reason: str,
) -> Outgoing:
    """A DLQ record: the original bytes, and the reason and origin (topic, partition, offset).

    A copy that the producer would refuse as too large is truncated; its headers then carry
    `claimwatch.truncated`, the original size and the sha256 of the original value.
    """
    topic, partition, offset = origin
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[:MAX_REASON_CHARS] + "..."
    headers = [
        ("claimwatch.reason", reason.encode()),
        ("claimwatch.topic", topic.encode()),
        ("claimwatch.partition", str(partition).encode()),
        ("claimwatch.offset", str(offset).encode()),
    ]
    if len(key or b"") + len(value) > DLQ_MAX_BYTES:
        headers += [
            ("claimwatch.truncated", b"true"),
            ("claimwatch.original_size", str(len(value)).encode()),
            ("claimwatch.original_sha256", hashlib.sha256(value).hexdigest().encode()),
        ]
        if key is not None and len(key) > DLQ_MAX_BYTES // 2:
            headers.append(("claimwatch.original_key_size", str(len(key)).encode()))
            key = key[: DLQ_MAX_BYTES // 2]
        value = value[: DLQ_MAX_BYTES - len(key or b"")]
    return Outgoing(names.dlq, key, value, partition, tuple(headers))


T = TypeVar("T")


def forget_partitions(cache: dict[int, Any], partitions: set[int] | None) -> None:
    """Drop what an edge keeps per partition: of `partitions`, or of all when None.

    Edges call it at a rebalance or after a recovery; what they drop is rebuilt from the
    table on first use.
    """
    if partitions is None:
        cache.clear()
    for p in partitions or ():
        cache.pop(p, None)


class PerPartition(Generic[T]):
    """What an edge keeps in memory per partition, built on first use and dropped at will.

    `build` restores a partition's value from the edge's table; `forget` drops values at a
    rebalance or after a recovery.
    """

    __slots__ = ("_build", "_kept")

    def __init__(self, build: Callable[[int], T]) -> None:
        self._build = build
        self._kept: dict[int, T] = {}

    def __getitem__(self, partition: int) -> T:
        kept = self._kept.get(partition)
        if kept is None:
            kept = self._kept[partition] = self._build(partition)
        return kept

    def forget(self, partitions: set[int] | None = None) -> None:
        """Drop what is kept of `partitions` (of all when None)."""
        forget_partitions(self._kept, partitions)


def stored_of(
    table: Mapping[bytes, bytes], prefix: bytes, partition: int
) -> Iterator[dict[str, Any]]:
    """The JSON records under `prefix` that name `partition` (`{"partition": p, ...}`)."""
    for key, raw in list(table.items()):
        if key.startswith(prefix):
            stored = loads(raw)
            if stored["partition"] == partition:
                yield stored


@dataclass(slots=True)
class Handled:
    """What one input record led to: records to send and events to count.

    Each feature's edge returns a subclass carrying what its agent needs besides.
    """

    sends: list[Outgoing] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def elsewhere(self, record: Elsewhere) -> None:
        """The record goes to the DLQ or to its home partition instead of being handled."""
        self.events.append(record.event)
        self.sends.append(record.send)


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """A record not handled here: dead-lettered (it does not decode) or sent to its home."""

    send: Outgoing
    event: str


def decode_at_home(
    names: TopicNames,
    origin: tuple[str, int, int],
    key: bytes | None,
    value: bytes,
    decode: Callable[[bytes], T],
    home_key: Callable[[T], bytes],
    partitions: int,
    event_prefix: str = "",
) -> T | Elsewhere:
    """The decoded record when it is in its home partition; else where it goes instead.

    A record that does not decode goes to the DLQ with the reason (`<prefix>dead_letter`);
    one whose key is not the key it belongs under, or that sits in another partition, is
    sent again under its key to its home partition (`<prefix>rerouted`).
    """
    topic, partition, _offset = origin
    try:
        item = decode(value)
    except DecodeError as exc:
        letter = dead_letter(names, origin, key, value, str(exc))
        return Elsewhere(letter, f"{event_prefix}dead_letter")
    wanted = home_key(item)
    home = misplaced(wanted, key, partition, partitions)
    if home is not None:
        return Elsewhere(Outgoing(topic, wanted, value, home), f"{event_prefix}rerouted")
    return item


def trusted_until(wall_clock_us: Callable[[], int] | None, skew_us: int) -> int | None:
    """The latest record time a worker trusts now: its wall clock plus the policy's skew.

    None without a wall clock (replay and tests take record times as they are). Every
    input that moves a clock (claims, ticks, verdict signals) is held to it.
    """
    return None if wall_clock_us is None else wall_clock_us() + skew_us


log = logging.getLogger(__name__)

Send = Callable[[Outgoing], Awaitable[None]]


@dataclass(slots=True)
class Record:
    """One input record as an agent read it. Never changed once made (see `Outgoing`)."""

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
