"""Where an input record belongs: decoded in its home partition, else rerouted or dead-lettered."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from claimwatch.wire.codec import DecodeError
from claimwatch.wire.topics import TopicNames, misplaced
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.outgoing import Elsewhere, Outgoing

T = TypeVar("T")


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
