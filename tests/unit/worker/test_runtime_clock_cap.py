"""Record times are trusted no further than the worker's wall clock plus `clock_skew`."""

from __future__ import annotations

import pytest
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.wire.topics import partition_for
from claimwatch.worker.claims.clock import CLOCK_PREFIX
from claimwatch.worker.claims.edge import Runtime
from claimwatch.worker.ticks import TICK_KEY, tick_value

from tests.support.claims import NAMES, claim_line
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

DAY = 86_400 * SECOND
POLICY = policy_with(settle="0s")
SKEW = POLICY.policy.defaults.clock_skew


def _record(cid: str, subject: str, at_us: int) -> tuple[int, bytes, bytes]:
    """(home partition, key, value) of a payment_status claim observed at `at_us`."""
    key = f"{subject}|payment_status".encode()
    value = claim_line(cid, "ledger-a", "paid", subject=subject, observed_at=format_rfc3339(at_us))
    return partition_for(key, 4), key, value


def _clock(table: dict[bytes, bytes], partition: int) -> int:
    return int(table[CLOCK_PREFIX + str(partition).encode()])


def _same_partition_subjects() -> tuple[str, str]:
    """Two subjects whose payment_status facts share a partition."""
    first = _record("x", "invoice:0", T0)[0]
    other = next(
        f"invoice:{n}" for n in range(1, 100) if _record("x", f"invoice:{n}", T0)[0] == first
    )
    return "invoice:0", other


@pytest.mark.parametrize(("wall", "outcome"), [(True, "resolved"), (False, "insufficient")])
def test_a_claim_stamped_ten_days_ahead_does_not_stop_the_next_claims(
    wall: bool, outcome: str
) -> None:
    """With the worker's wall clock a forged stamp is capped: the next claim is resolved.

    Issue 40 item 4(a) at the runtime; without a wall clock (the old worker) the clock is
    10 days on, and the genuine claim is answered only as a stale one.
    """
    table: dict[bytes, bytes] = {}
    runtime = Runtime(POLICY, NAMES, 4, table, wall_clock_us=(lambda: T0) if wall else None)
    forged_subject, genuine_subject = _same_partition_subjects()
    home, key, value = _record("forged", forged_subject, T0)
    forged = runtime.handle(home, 0, key, value, T0 + 10 * DAY)
    _, key, value = _record("genuine", genuine_subject, T0 + SECOND)
    genuine = runtime.handle(home, 1, key, value, T0 + SECOND)

    assert [outcome] == [d.record["outcome"] for d in genuine.decided]
    assert wall == ("clock_capped" in forged.events)
    if wall:
        assert T0 + SKEW >= _clock(table, home)


def test_a_forged_tick_moves_the_clock_no_further_than_the_wall_clock_plus_skew() -> None:
    """A tick stamped and valued ten days ahead is capped, and counted as capped and bad."""
    table: dict[bytes, bytes] = {}
    runtime = Runtime(POLICY, NAMES, 4, table, wall_clock_us=lambda: T0)
    handled = runtime.handle(0, 0, TICK_KEY, tick_value(T0 + 10 * DAY), T0 + 10 * DAY)
    assert {"clock_capped", "bad_tick"} <= set(handled.events)
    assert T0 + SKEW - runtime.lateness_us == _clock(table, 0)


@pytest.mark.parametrize(("ahead", "capped"), [(0, False), (SKEW, False), (SKEW + 1, True)])
def test_only_a_time_past_the_wall_clock_plus_skew_is_capped(ahead: int, capped: bool) -> None:
    """A record time up to the skew ahead of the wall clock is taken as it is."""
    runtime = Runtime(POLICY, NAMES, 4, {}, wall_clock_us=lambda: T0)
    home, key, value = _record("c1", "invoice:1", T0)
    handled = runtime.handle(home, 0, key, value, T0 + ahead)
    assert capped == ("clock_capped" in handled.events)
