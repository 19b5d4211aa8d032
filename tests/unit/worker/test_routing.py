"""Routing: decode in the home partition, else reroute or dead-letter (a step edges share)."""

from __future__ import annotations

import pytest
from claimwatch.wire.codec import DecodeError
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.outgoing import Elsewhere, Handled, Outgoing
from claimwatch.worker.routing import decode_at_home

NAMES = TopicNames("t.")
PARTITIONS = 4
HOME = partition_for(b"k", PARTITIONS)
OTHER = (HOME + 1) % PARTITIONS


def _decode(value: bytes) -> str:
    if not value.startswith(b"ok:"):
        raise DecodeError(f"not ok: {value!r}")
    return value.decode()[3:]


def _home_key(item: str) -> bytes:
    return item.encode()


@pytest.mark.parametrize(
    ("key", "partition", "value", "expected"),
    [
        (b"k", HOME, b"ok:k", "k"),  # decoded, keyed right, in its home: handled here
        (b"k", OTHER, b"ok:k", Elsewhere(Outgoing("t.in", b"k", b"ok:k", HOME), "x_rerouted")),
        (b"j", HOME, b"ok:k", Elsewhere(Outgoing("t.in", b"k", b"ok:k", HOME), "x_rerouted")),
        (None, HOME, b"ok:k", Elsewhere(Outgoing("t.in", b"k", b"ok:k", HOME), "x_rerouted")),
    ],
)
def test_a_record_is_handled_at_home_or_sent_there(
    key: bytes | None, partition: int, value: bytes, expected: object
) -> None:
    """At home under its own key: the item; anywhere else: one copy to its home."""
    origin = ("t.in", partition, 7)
    actual = decode_at_home(NAMES, origin, key, value, _decode, _home_key, PARTITIONS, "x_")
    assert expected == actual


def test_a_record_that_does_not_decode_is_dead_lettered_with_its_reason_and_origin() -> None:
    """The DLQ copy keeps the bytes; its headers say why and where it came from."""
    origin = ("t.in", OTHER, 7)
    actual = decode_at_home(NAMES, origin, b"k", b"garbage", _decode, _home_key, PARTITIONS)
    assert isinstance(actual, Elsewhere)
    assert ("dead_letter", NAMES.dlq, b"garbage") == (
        actual.event,
        actual.send.topic,
        actual.send.value,
    )
    assert {
        "claimwatch.reason": b"not ok: b'garbage'",
        "claimwatch.topic": b"t.in",
        "claimwatch.partition": str(OTHER).encode(),
        "claimwatch.offset": b"7",
    } == dict(actual.send.headers)


def test_elsewhere_adds_its_send_and_event_to_what_a_record_led_to() -> None:
    """Handled.elsewhere records both, in order."""
    out = Handled()
    out.elsewhere(Elsewhere(Outgoing("t.in", b"k", b"v", 1), "rerouted"))
    assert ([Outgoing("t.in", b"k", b"v", 1)], ["rerouted"]) == (out.sends, out.events)
