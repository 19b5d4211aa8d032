"""The runtime edge: routing, dead letters, and re-sending decisions after a restart."""

from __future__ import annotations

from streams.wire.topics import partition_for
from streams.worker.claims.edge import Runtime
from tests.support.claims import NAMES, claim_bytes, decisions
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
