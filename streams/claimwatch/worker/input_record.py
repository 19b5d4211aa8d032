"""One input record as an agent read it, taken from a Faust event."""

from __future__ import annotations

from dataclasses import dataclass


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
