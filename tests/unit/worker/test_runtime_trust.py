"""The claims edge against forged ticks, tombstones, oversized copies and a clock gone wild."""

from __future__ import annotations

import hashlib
import math

import pytest
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.claims.clock import CLOCK_PREFIX
from claimwatch.worker.claims.edge import Runtime
from claimwatch.worker.dead_letters import DLQ_MAX_BYTES, dead_letter
from claimwatch.worker.ticks import TICK_KEY, tick_at, tick_time, tick_value
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.claims import NAMES, claim_bytes, decisions
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

LATENESS = 1 * SECOND


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b'{"__tick__":5}', 5),
        (tick_value(T0), T0),
        (b'{"__tick__":9223372036854775807}', 2**63 - 1),
        (b'{"__tick__":9223372036854775808}', None),
        (b'{"__tick__":1' + b"0" * 400 + b"}", None),
        (b'{"__tick__":-1}', None),
        (b'{"__tick__":"5"}', None),
        (b'{"__tick__":5.0}', None),
        (b'{"__tick__":true}', None),
        (b'{"__tick__":5,"x":1}', None),
        (b'{"__tick__": garbage', None),
        (b"[5]", None),
        (b"", None),
        (b"\xff\xfe", None),
    ],
)
def test_tick_time_accepts_only_a_whole_int64_under_the_one_key(
    value: bytes, expected: int | None
) -> None:
    """Anything but {"__tick__": <int64 >= 0>} is not a tick time."""
    assert expected == tick_time(value)


def _clock(table: dict[bytes, bytes], partition: int) -> int:
    return int(table[CLOCK_PREFIX + str(partition).encode()])


@pytest.mark.parametrize(
    "forged",
    [
        b'{"__tick__":9223372036854775807}',
        b'{"__tick__":1' + b"0" * 400 + b"}",
        b'{"__tick__": not json',
        b'{"__tick__":"soon"}',
        b"",
    ],
)
def test_forged_tick_moves_the_clock_at_most_to_its_broker_time(forged: bytes) -> None:
    """The clock stays at broker time minus lateness; a later claim is still decided."""
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, table)
    key, value = claim_bytes("c1", T0)
    home = partition_for(key, 4)
    handled = runtime.handle(home, 0, TICK_KEY, forged, T0 + LATENESS)
    assert ["bad_tick"] == [e for e in handled.events if e == "bad_tick"]
    assert _clock(table, home) <= T0 if CLOCK_PREFIX + str(home).encode() in table else True
    later = runtime.handle(home, 1, key, value, T0 + LATENESS)
    assert 1 == len(decisions([later]))


def test_tick_within_its_broker_time_is_not_counted_as_bad() -> None:
    """The worker's own ticks (wall time minus lateness) move the clock as written."""
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy_with(), NAMES, 4, table)
    handled = runtime.handle(0, 0, TICK_KEY, tick_value(T0), T0 + LATENESS)
    assert ["tick"] == [e for e in handled.events if "tick" in e]
    assert T0 == _clock(table, 0)


@settings(max_examples=300, deadline=None)
@given(
    now_ns=st.integers(min_value=T0 * 1000, max_value=T0 * 1000 + 10**12),
    delay_ns=st.integers(min_value=0, max_value=5 * 10**9),
    lateness_s=st.sampled_from([1.0, 0.5, 0.0015, 2.25]),
)
def test_a_tick_the_worker_writes_is_never_past_its_broker_time(
    now_ns: int, delay_ns: int, lateness_s: float
) -> None:
    """Stamped by the broker in whole ms at any moment after it is written, it is not bad."""
    lateness_us = math.ceil(lateness_s * 1_000_000)
    runtime = Runtime(policy_with(), NAMES, 4, {}, lateness_us=lateness_us)
    at = tick_at(now_ns, lateness_s)
    broker_us = (now_ns + delay_ns) // 1_000_000 * 1000  # LogAppendTime, milliseconds
    handled = runtime.handle(0, 0, TICK_KEY, tick_value(at), broker_us)
    assert [] == [e for e in handled.events if e == "bad_tick"]
    assert 0 <= now_ns // 1000 - lateness_us - at < 2000  # whole ms, at most 2 ms early


def test_tombstone_goes_to_the_dlq_with_reason_tombstone() -> None:
    """A null value is dead-lettered (empty bytes, reason tombstone), nothing decided."""
    runtime = Runtime(policy_with(), NAMES, 4, {})
    handled = runtime.handle(2, 7, b"invoice:1|payment_status", None, T0)
    (out,) = handled.sends
    headers = dict(out.headers)
    assert (NAMES.dlq, b"") == (out.topic, out.value)
    assert headers["claimwatch.reason"].startswith(b"tombstone")
    assert (b"2", b"7") == (headers["claimwatch.partition"], headers["claimwatch.offset"])


def test_oversized_dlq_copy_is_truncated_with_size_and_sha256() -> None:
    """A copy beyond the producer's limit keeps a prefix; headers tell the original."""
    value = b"x" * (DLQ_MAX_BYTES + 10_000)
    out = dead_letter(TopicNames("t."), ("t.claims", 1, 5), b"k", value, "too big")
    headers = dict(out.headers)
    assert DLQ_MAX_BYTES >= len(out.value) + len(out.key or b"")
    assert value.startswith(out.value)
    assert b"true" == headers["claimwatch.truncated"]
    assert str(len(value)).encode() == headers["claimwatch.original_size"]
    assert hashlib.sha256(value).hexdigest().encode() == headers["claimwatch.original_sha256"]


def test_small_dlq_copy_is_whole_and_unmarked() -> None:
    """A copy within the limit is the original bytes, with no truncation headers."""
    out = dead_letter(TopicNames("t."), ("t.claims", 0, 0), b"k", b"{}", "reason")
    assert b"{}" == out.value
    assert "claimwatch.truncated" not in dict(out.headers)


def test_long_reason_is_cut_to_keep_the_header_small() -> None:
    """An exception message quoting a whole value does not blow up the reason header."""
    out = dead_letter(TopicNames("t."), ("t.claims", 0, 0), None, b"", "r" * 100_000)
    assert 2_100 > len(dict(out.headers)["claimwatch.reason"])


def test_clock_stored_far_ahead_is_repaired_on_load() -> None:
    """A clock an older release let a forged tick push ahead comes back to broker time."""
    table: dict[bytes, bytes] = {CLOCK_PREFIX + b"0": str(2**62).encode()}
    key, value = claim_bytes("c1", T0)
    home = partition_for(key, 4)
    table[CLOCK_PREFIX + str(home).encode()] = str(2**62).encode()
    runtime = Runtime(
        policy_with(settle="0s"), NAMES, 4, table, wall_clock_us=lambda: T0 + LATENESS
    )
    handled = runtime.handle(home, 3, key, value, T0 + LATENESS)
    assert "clock_repaired" in handled.events
    assert 1 == len(decisions([handled]))
    assert T0 + LATENESS >= _clock(table, home)


def test_clock_within_the_skew_of_the_wall_clock_is_left_alone() -> None:
    """A clock just ahead of the wall clock (a claim within the skew) is not repaired."""
    key, value = claim_bytes("c1", T0)
    home = partition_for(key, 4)
    table = {CLOCK_PREFIX + str(home).encode(): str(T0 + 2 * SECOND).encode()}
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, table, wall_clock_us=lambda: T0)
    handled = runtime.handle(home, 3, key, value, T0)
    assert "clock_repaired" not in handled.events
    assert T0 + 2 * SECOND == _clock(table, home)


def test_abandon_drops_half_done_changes_of_a_failed_record() -> None:
    """After a failure the partition is rebuilt from the table, not from the broken step."""
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, table)
    key, value = claim_bytes("c1", T0)
    home = partition_for(key, 4)
    runtime.handle(home, 0, key, value, T0 + LATENESS)
    before = dict(table)
    state = runtime.facts["invoice:1|payment_status"]
    runtime.facts["invoice:1|payment_status"] = state  # a write the failing record made
    runtime.abandon(home)
    runtime.facts.flush()
    assert before == table
    again = runtime.handle(home, 1, *claim_bytes("c2", T0 + SECOND), T0 + SECOND + LATENESS)
    assert 1 == len(decisions([again]))
