"""The detectors' edge: one field's failure resets that field alone; long names never poison.

Issue 40: whatever raises while one field's detectors are fed or ticked resets that field
(counted in `claimwatch_quarantined_total{feature="alerts"}`), the other fields go on; and
a valid claim with a long source, subject or field never makes its field's alerts-input
record (up to 500 decisions' entries) fail the detectors' input validation.
"""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.alerts.entry import EntryError, entries_from_obj
from claimwatch.core.alerts.lag import ReplicaLag
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.alerts.shape import MAX_NAME_CHARS, bounded_name
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.wire.codec import dumps, loads
from claimwatch.wire.topics import partition_for
from claimwatch.worker.alerts.agents import count_quarantined
from claimwatch.worker.alerts.edge import AlertRuntime
from claimwatch.worker.claims.edge import Runtime
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.ticks import tick_value
from hypothesis import given
from hypothesis import strategies as st

from tests.support.alerts import REPLICA, Entries, Facts
from tests.support.claims import NAMES, claim_line
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

GOOD, POISON = "payment_status", "balance"


def quarantined(metrics: Metrics) -> float | None:
    """`claimwatch_quarantined_total{feature="alerts"}`."""
    return metrics.registry.get_sample_value("claimwatch_quarantined_total", {"feature": "alerts"})


def record_of(policy: CompiledPolicy, name: str, subjects: int, at: int) -> bytes:
    """An alerts-input record of field `name`: the owner and the replica answer per subject."""
    facts, made, entries = Facts(policy), Entries(policy), []
    for i in range(subjects):
        decision = facts.observe(
            f"invoice:{i}", at + i * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid")
        )
        decision = {**decision, "field": name}
        entries.append(made.of(decision, parse_rfc3339(decision["decided_at"])))
    return dumps({"field": name, "entries": entries})


def raising_for(name: str, method: Any) -> Any:
    """`method`, but raising RuntimeError when its state or field is `name`."""

    def step(self: Any, first: Any, *args: Any) -> Any:
        field = first if isinstance(first, str) else first.field
        if field == name:
            raise RuntimeError(f"poisoned {field}")
        return method(self, first, *args)

    return step


def test_a_field_whose_entry_raises_is_reset_and_counted_and_the_others_go_on(
    policy: CompiledPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`AlertRunner.on_entry` raises for one field: that field reset, the other one stored."""
    monkeypatch.setattr(AlertRunner, "on_entry", raising_for(POISON, AlertRunner.on_entry))
    table: dict[bytes, bytes] = {}
    runtime, metrics = AlertRuntime(policy, 1, table), Metrics(policy)

    batches = [runtime.handle(0, record_of(policy, n, 5, T0)) for n in (POISON, GOOD)]
    batches.append(runtime.handle(0, tick_value(T0 + 30 * SECOND)))
    for batch in batches:
        count_quarantined(metrics, batch)

    assert [1, 0, 0] == [b.quarantined for b in batches]
    assert [None, None, None] == [b.rejected for b in batches]
    assert 1.0 == quarantined(metrics)
    assert [GOOD.encode()] == list(table)
    assert runtime.state_of(POISON) is None
    assert {REPLICA} == {f.source for f in batches[2].figures}


def test_a_field_whose_tick_raises_is_reset_and_counted_and_the_others_go_on(
    policy: CompiledPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ReplicaLag.advance` raises for one field's state: its stored state is dropped too."""
    table: dict[bytes, bytes] = {}
    runtime, metrics = AlertRuntime(policy, 1, table), Metrics(policy)
    for name in (POISON, GOOD):
        runtime.handle(0, record_of(policy, name, 5, T0))
    runtime.handle(0, tick_value(T0 + 10 * SECOND))
    assert {POISON.encode(), GOOD.encode()} == set(table)
    monkeypatch.setattr(ReplicaLag, "advance", raising_for(POISON, ReplicaLag.advance))

    batch = runtime.handle(0, tick_value(T0 + 20 * SECOND))
    count_quarantined(metrics, batch)
    later = runtime.handle(0, record_of(policy, GOOD, 3, T0 + 21 * SECOND))

    assert (1, 1.0) == (batch.quarantined, quarantined(metrics))
    assert {GOOD} == {f.field for f in batch.figures}
    assert [GOOD.encode()] == list(table)
    assert (0, None) == (later.quarantined, later.rejected)
    state = runtime.state_of(GOOD)
    assert state is not None and REPLICA in state[1].sources


def _claims(source: str, subject: str) -> list[tuple[bytes, bytes]]:
    """Two owners disagreeing on a fact (one of them `source`), then 20 ordinary facts."""
    made = [
        ("a", "ledger-a", "paid", subject),
        ("b", source, "unpaid", subject),
        *((f"o{n}", "ledger-a", "paid", f"invoice:{n}") for n in range(20)),
    ]
    return [
        (
            f"{sub}|payment_status".encode(),
            claim_line(cid, src, value, subject=sub, observed_at=format_rfc3339(T0)),
        )
        for cid, src, value, sub in made
    ]


def test_a_claim_with_long_names_never_poisons_the_detectors_input() -> None:
    """A 2,009-character source on a 3,008-character subject: every entry reaches the detectors.

    The first version refused the whole alerts-input record (the fact and the source are
    past 1,024 characters), so the 21 other decisions of the field were lost with it.
    """
    source, subject = "ledger-b@" + "r" * 2000, "invoice:" + "s" * 3000
    policy = policy_with(settle="0s")
    claims = Runtime(policy, NAMES, 4, {})
    for offset, (key, value) in enumerate(_claims(source, subject)):
        claims.handle(partition_for(key, 4), offset, key, value)
    sends = claims.drain()
    detectors = AlertRuntime(policy, 4, {})

    batches = [detectors.handle(s.partition or 0, s.value) for s in sends]

    entries = [e for s in sends for e in loads(s.value)["entries"]]
    assert [None] == list({b.rejected for b in batches})
    assert 22 == len(entries)
    assert bounded_name(f"{subject}|payment_status") in {e[1] for e in entries}
    named = [o[0] for e in entries for o in e[3] or ()]
    named += [s for e in entries if e[2] is not None for s in e[2][1]]
    assert bounded_name(source) in named
    assert MAX_NAME_CHARS >= max(len(n) for n in named)
    state = detectors.state_of("payment_status")
    assert state is not None and bounded_name(source) in state[1].sources


def test_a_long_field_name_is_clipped_not_refused() -> None:
    """An alerts-input record names its field as the claims did: clipped to a bounded label."""
    name, entries = entries_from_obj({"field": "f" * 5000, "entries": []})
    assert (bounded_name("f" * 5000), []) == (name, entries)
    assert MAX_NAME_CHARS == len(name)
    with pytest.raises(EntryError):
        entries_from_obj({"field": "", "entries": []})


@given(st.text(max_size=3000), st.text(max_size=3000))
def test_a_bounded_name_is_short_deterministic_and_tells_names_apart(a: str, b: str) -> None:
    """Short names stay as they are; long ones are clipped to the bound, distinct stays distinct."""
    assert MAX_NAME_CHARS >= len(bounded_name(a))
    assert bounded_name(a) == bounded_name(a)
    if len(a) <= MAX_NAME_CHARS:
        assert a == bounded_name(a)
    if a != b:
        assert bounded_name(a) != bounded_name(b)
    long = "x" * MAX_NAME_CHARS
    assert bounded_name(long + a + "1") != bounded_name(long + a + "2")
