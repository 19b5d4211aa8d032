"""What an edge returns for one input record: the records to send and the events to count."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Outgoing:
    """One record to send. Never changed once made.

    Not declared frozen: a frozen dataclass sets each field through `object.__setattr__`,
    a cost every record sent would pay (see `Claim`).
    """

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None
    headers: tuple[tuple[str, bytes], ...] = ()


#: Sends one record (through the app's Faust topics, or a test's list).
Send = Callable[[Outgoing], Awaitable[None]]


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
