"""The runtime edge: routing, dead letters, and re-sending decisions after a restart."""

from __future__ import annotations

import pytest
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.wire.codec import loads
from claimwatch.wire.topics import partition_for
from claimwatch.worker.claims import entries as claims_entries
from claimwatch.worker.claims.edge import Runtime
from claimwatch.worker.ticks import TICK_KEY, tick_value

from tests.support.claims import NAMES, claim_bytes, claim_line, decisions
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with


def test_restart_resends_decisions_made_after_the_committed_offset() -> None:
    """State that outlived its outputs: the restarted runtime sends the decision again."""
    table: dict[bytes, bytes] = {}
    key, value = claim_bytes("c1", T0)
    home = partition_for(key, 4)
    policy = policy_with(settle="0s")
    first = Runtime(policy, NAMES, 4, table)
    sent = decisions([first.handle(home, 10, key, value)])
    assert 1 == len(sent)
    restarted = Runtime(policy, NAMES, 4, table)  # same table: the changelog survived
    again = restarted.handle(home, 10, key, value)  # the uncommitted record comes back
    assert sent == decisions([again])
    later = Runtime(policy, NAMES, 4, table)
    assert [] == decisions([later.handle(home, 11, b"__tick__", b'{"__tick__":%d}' % T0)])


def test_misrouted_claim_is_forwarded_to_its_home_partition() -> None:
    """A claim keyed otherwise is re-published keyed by fact, to its home partition."""
    runtime = Runtime(policy_with(), NAMES, 4, {})
    key, value = claim_bytes("c1", T0 + SECOND)
    home = partition_for(key, 4)
    handled = runtime.handle((home + 1) % 4, 0, b"other", value)
    assert [(NAMES.claims, key, home)] == [(s.topic, s.key, s.partition) for s in handled.sends]


def test_not_json_goes_to_the_dead_letter_topic_with_its_bytes() -> None:
    """Bytes that are not a claim keep their origin in the DLQ headers."""
    runtime = Runtime(policy_with(), NAMES, 4, {})
    handled = runtime.handle(2, 7, b"k", b"{nope")
    (dead,) = handled.sends
    headers = dict(dead.headers)
    assert (NAMES.dlq, b"{nope", b"2", b"7") == (
        dead.topic,
        dead.value,
        headers["claimwatch.partition"],
        headers["claimwatch.offset"],
    )
    assert headers["claimwatch.reason"].startswith(b"not JSON")


def _claims_of(subjects: list[str], at: int) -> list[tuple[bytes, bytes]]:
    """A payment_status claim of each subject at `at`, as Kafka key and value."""
    out = []
    for n, subject in enumerate(subjects):
        value = claim_line(
            f"c-{n}", "ledger-a", "paid", subject=subject, observed_at=format_rfc3339(at)
        )
        out.append((f"{subject}|payment_status".encode(), value))
    return out


def test_decisions_reach_the_detectors_as_one_record_per_field() -> None:
    """Staged entries of many decisions drain as one alerts-input record per field."""
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, {})
    claims = _claims_of([f"invoice:{n}" for n in range(30)], T0)
    handled = [runtime.handle(partition_for(k, 4), n, k, v) for n, (k, v) in enumerate(claims)]

    sends = runtime.drain()

    assert [] == [s for h in handled for s in h.sends if s.topic == NAMES.alerts_input]
    key = b"payment_status"
    assert [(NAMES.alerts_input, key, partition_for(key, 4))] == [
        (s.topic, s.key, s.partition) for s in sends
    ]
    entries = loads(sends[0].value)["entries"]
    assert sorted(f"invoice:{n}|payment_status" for n in range(30)) == sorted(e[1] for e in entries)
    assert [] == runtime.drain()


def test_a_full_record_of_entries_is_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ENTRIES_PER_RECORD a field's entries take more records, none lost."""
    monkeypatch.setattr(claims_entries, "ENTRIES_PER_RECORD", 4)
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, {})
    for n, (k, v) in enumerate(_claims_of([f"invoice:{n}" for n in range(10)], T0)):
        runtime.handle(partition_for(k, 4), n, k, v)

    assert runtime.staged_full()
    sizes = [len(loads(s.value)["entries"]) for s in runtime.drain()]

    assert [4, 4, 2] == sizes


def test_a_tick_sends_the_staged_entries_before_its_own_record() -> None:
    """The detectors get a partition's entries before the tick that moves them past them."""
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, {})
    ((key, value),) = _claims_of(["invoice:1"], T0)
    home = partition_for(key, 4)
    runtime.handle(home, 0, key, value)

    tick = runtime.handle(home, 1, TICK_KEY, tick_value(T0 + 5 * SECOND))

    inputs = [s for s in tick.sends if s.topic == NAMES.alerts_input]
    assert [b"payment_status", TICK_KEY] == [s.key for s in inputs]
    assert [] == runtime.drain()
