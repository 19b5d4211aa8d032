"""A claim pruning would drop before any decision listed it stays to be listed `stale`."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor, StepResult
from claimwatch.core.state import FactState
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import Policy

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

KEY = "invoice:1|payment_status"


def claim(cid: str, value: str, at_us: int, source: str = "ledger-a", **extra: Any) -> Claim:
    """A payment_status claim of invoice:1."""
    return claim_from_envelope(
        envelope(
            cid, source, value, subject="invoice:1", observed_at=format_rfc3339(at_us), **extra
        )
    )


def listed(results: list[StepResult]) -> list[dict[str, str]]:
    """Each decision's {claim id: disposition}, in order."""
    return [
        {c["claim_id"]: c["disposition"] for c in decided.record["claims"]}
        for result in results
        for decided in result.decisions
    ]


def run(claims: list[Claim], restart: bool = False, **field: Any) -> list[dict[str, str]]:
    """The claims through one partition (settle 2 s), then ticks past every deadline."""
    policy = policy_with(settle="2s", **field)
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy, 0, facts)
    results = [proc.on_claim(c) for c in claims]
    if restart:  # the stored form carries the marks: a restored partition lists them too
        facts = {k: FactState.from_obj(s.to_obj()) for k, s in facts.items()}
        proc = PartitionProcessor(policy, 0, facts, proc.clock_us)
        proc.rebuild(facts.values())
    results.append(proc.on_tick(max(c.observed_us or T0 for c in claims) + 5 * SECOND))
    return listed(results)


@pytest.mark.parametrize("restart", [False, True], ids=["live", "restored"])
def test_a_claim_superseded_by_its_source_in_its_window_is_listed_stale(restart: bool) -> None:
    """On a field kept until edited, the older claim of a source no longer votes."""
    claims = [claim("a", "unpaid", T0), claim("b", "paid", T0 + SECOND)]
    decisions = run(claims, restart, freshness="until_edited")
    assert [{"a": "stale", "b": "won"}] == decisions


def test_a_lineage_beyond_max_lineages_in_its_window_is_listed_stale() -> None:
    """The oldest lineage past the cap is out of the running, and still answered."""
    claims = [claim(f"l{n}", "paid", T0 + n * SECOND, lineage=f"lin{n}") for n in range(3)]
    base = policy_with(settle="2s").policy.model_dump(mode="json", exclude_unset=True)
    policy = CompiledPolicy(Policy.model_validate({**base, "defaults": {"max_lineages": 2}}))
    proc = PartitionProcessor(policy, 0, {})
    results = [proc.on_claim(c) for c in claims]
    results.append(proc.on_tick(T0 + 10 * SECOND))
    (decision,) = listed(results)
    assert "stale" == decision["l0"]
    assert {"won", "corroborating"} == {decision["l1"], decision["l2"]}


def test_a_claim_past_the_horizon_at_its_deadline_is_listed_stale() -> None:
    """Accepted 89 s old on a 90 s horizon, past it when its window closes: listed `stale`."""
    claims = [claim("now", "paid", T0 + 89 * SECOND), claim("edge", "unpaid", T0)]
    assert [{"now": "won", "edge": "stale"}] == run(claims)


def test_a_listed_claim_is_pruned_after_its_decision() -> None:
    """Once listed, a superseded claim leaves the fact: the next decision lists it no more."""
    policy = policy_with(settle="2s", freshness="until_edited")
    proc = PartitionProcessor(policy, 0, {})
    proc.on_claim(claim("a", "unpaid", T0))
    proc.on_claim(claim("b", "paid", T0 + SECOND))
    proc.on_tick(T0 + 5 * SECOND)
    later = [proc.on_claim(claim("c", "paid", T0 + 6 * SECOND, source="ledger-b"))]
    later.append(proc.on_tick(T0 + 10 * SECOND))
    assert [{"b": "corroborating", "c": "won"}] == listed(later)
