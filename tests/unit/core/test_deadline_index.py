"""The partition step's deadline index: superseded entries are dropped, decisions unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core import processor as processor_module
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.processor import PartitionProcessor
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

FACTS = 300
ROUNDS = 6


def claim(fact: int, round_: int) -> Claim:
    """A claim of fact `fact`, one of ROUNDS that each move the fact's deadline on."""
    at = format_rfc3339(T0 + round_ * SECOND + fact * 1_000)
    source = ("ledger-a", "ledger-b")[(fact + round_) % 2]
    value = ("paid", "unpaid")[(fact * round_) % 2]
    return claim_from_envelope(
        envelope(f"c{fact}-{round_}", source, value, subject=f"invoice:{fact}", observed_at=at)
    )


def run(slack: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], PartitionProcessor]:
    """Every decision id of the workload (claims, ticks, end of input) at a COMPACT_SLACK."""
    monkeypatch.setattr(processor_module, "COMPACT_SLACK", slack)
    proc = PartitionProcessor(policy_with(settle="5s"), 0, {})
    ids: list[Any] = []
    for round_ in range(ROUNDS):
        for fact in range(FACTS):
            ids += [d.record["decision_id"] for d in proc.on_claim(claim(fact, round_)).decisions]
        tick = proc.on_tick(T0 + round_ * SECOND)
        ids += [d.record["decision_id"] for d in tick.decisions]
    ids += [d.record["decision_id"] for d in proc.flush().decisions]
    return ids, proc


def test_compacting_the_index_changes_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same decisions, in the same order, whether the index is compacted always or never."""
    never, _ = run(10**9, monkeypatch)
    always, _ = run(0, monkeypatch)
    assert FACTS <= len(never)
    assert never == always


def test_the_index_holds_one_entry_per_pending_fact() -> None:
    """Claims that keep moving deadlines later leave one entry per fact, not one per claim."""
    proc = PartitionProcessor(policy_with(settle="60s"), 0, {})
    for round_ in range(ROUNDS):
        for fact in range(FACTS):
            proc.on_claim(claim(fact, round_))
    pending = sum(1 for s in proc.facts.values() if s.due_us is not None)
    assert (FACTS, FACTS) == (pending, len(proc._due))


def test_a_window_opened_before_a_pending_expiry_is_decided_at_its_own_deadline() -> None:
    """A deadline moved earlier than the fact's entry gets an entry of its own; both come due."""
    proc = PartitionProcessor(policy_with(settle="5s"), 0, {})
    decided = [proc.on_claim(claim(0, 0)), proc.on_tick(T0 + 6 * SECOND)]
    # the fact now waits for its claim's expiry (60 s on); a new claim opens a 5 s window
    decided.append(proc.on_claim(claim(0, 10)))
    decided += [proc.on_tick(T0 + s * SECOND) for s in (14, 16, 59, 61, 71)]
    times = [d.record["decided_at"] for r in decided for d in r.decisions]
    expected = [T0 + 5 * SECOND, T0 + 15 * SECOND, T0 + 60 * SECOND + 1, T0 + 70 * SECOND + 1]
    assert [format_rfc3339(t) for t in expected] == times
