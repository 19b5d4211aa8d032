"""One fact's failure stays with that fact; every claim is answered; a fact's bytes are bounded."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core import processor as processor_module
from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.decision import decision_id
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor, StepResult
from claimwatch.core.size import MAX_CLAIM_ENCODED_BYTES, MAX_FACT_CLAIM_BYTES, claim_size
from claimwatch.core.state import FactState
from claimwatch.core.text.words import MAX_NUMBER_DIGITS, parse_number
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

#: the digit run of issue 40 item 1 (about 9 KB; int() refuses more than 4,300 digits)
DIGIT_RUN = "total " + "1," * 4400


def claim(cid: str, value: Any, at_us: int = T0, subject: str = "invoice:1", **extra: Any) -> Claim:
    """A payment_status claim of `subject` from ledger-a observed at `at_us`."""
    return claim_from_envelope(
        envelope(
            cid, "ledger-a", value, subject=subject, observed_at=format_rfc3339(at_us), **extra
        )
    )


def summary(cid: str, value: str, source: str = "user", at_us: int = T0) -> Claim:
    """A claim of the example policy's `summary` (text) field of doc:1."""
    return claim_from_envelope(
        envelope(
            cid, source, value, subject="doc:1", field="summary", observed_at=format_rfc3339(at_us)
        )
    )


def decided(results: list[StepResult]) -> dict[str, list[dict[str, Any]]]:
    """Every decision record emitted, by fact key, in order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for decision in result.decisions:
            record = decision.record
            found.setdefault(f"{record['subject']}|{record['field']}", []).append(record)
    return found


@pytest.mark.parametrize(
    ("token", "expected"),
    [("1,000.5", 1000.5), ("12", 12.0), ("3,5", 3.5), ("9" * MAX_NUMBER_DIGITS, float("9" * 40))],
)
def test_a_number_token_within_the_digit_bound_is_read(token: str, expected: float) -> None:
    """Ordinary numbers are read as before."""
    number = parse_number(token)
    assert number is not None
    assert expected == pytest.approx(float(number))


@pytest.mark.parametrize("token", ["9" * (MAX_NUMBER_DIGITS + 1), "1," * 4400, "1." * 5000])
def test_a_number_token_past_the_digit_bound_is_not_a_number(token: str) -> None:
    """Long digit runs are words: nothing calls int() on thousands of digits."""
    assert parse_number(token) is None


def test_a_digit_run_beyond_int_limits_is_decided_with_its_fact(policy: CompiledPolicy) -> None:
    """Issue 40 item 1 on the core: the 9 KB digit run is decided like any passage."""
    proc = PartitionProcessor(policy, 0, {})
    proc.on_claim(summary("a", "total 5 apples"))
    proc.on_claim(summary("b", DIGIT_RUN))
    result = proc.on_tick(T0 + 10 * SECOND)
    (record,) = decided([result])["doc:1|summary"]
    assert [] == result.quarantined
    assert {"a", "b"} == {c["claim_id"] for c in record["claims"]}
    assert "rejected" != record["outcome"]


def poison_resolve(monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    """Deciding a fact with a claim whose value is `marker` raises (a fault nobody has found)."""
    real = processor_module.resolve_entries

    def resolve_entries(claims: Any, *args: Any, **kwargs: Any) -> Any:
        claims = list(claims)
        if any(c.value == marker for c in claims):
            raise RuntimeError("boom")
        return real(claims, *args, **kwargs)

    monkeypatch.setattr(processor_module, "resolve_entries", resolve_entries)


def test_a_fact_whose_deciding_raises_is_rejected_and_the_partition_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The poison fact: `rejected`, every claim listed, state dropped; the others decide."""
    poison_resolve(monkeypatch, "unpaid")
    policy = policy_with()
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy, 0, facts)
    steps = [
        proc.on_claim(claim("p1", "paid", subject="invoice:bad")),
        proc.on_claim(claim("p2", "unpaid", subject="invoice:bad")),
        proc.on_claim(claim("ok", "paid", subject="invoice:good")),
        proc.on_tick(T0 + 10 * SECOND),
        proc.on_claim(claim("later", "paid", T0 + 11 * SECOND, subject="invoice:later")),
        proc.on_tick(T0 + 20 * SECOND),
    ]
    found = decided(steps)
    (bad,) = found["invoice:bad|payment_status"]
    reason = "internal_error: RuntimeError: boom"
    pairs = [("p1", "rejected"), ("p2", "rejected")]
    assert {
        "decision_id": decision_id("test-1", "invoice:bad|payment_status", pairs),
        "outcome": "rejected",
        "reason": reason,
        "action": "degrade",
        "claims": {"p1": ("rejected", reason), "p2": ("rejected", reason)},
    } == {
        "decision_id": bad["decision_id"],
        "outcome": bad["outcome"],
        "reason": bad["reason"],
        "action": bad["action"],
        "claims": {c["claim_id"]: (c["disposition"], c["error"]) for c in bad["claims"]},
    }
    assert ["resolved"] == [d["outcome"] for d in found["invoice:good|payment_status"]]
    assert ["resolved"] == [d["outcome"] for d in found["invoice:later|payment_status"]]
    aside = [q for step in steps for q in step.quarantined]
    assert [("invoice:bad|payment_status", ["p1", "p2"], reason)] == [
        (q.key, [c.claim_id for c in q.claims], q.reason) for q in aside
    ]
    assert isinstance(aside[0].error, RuntimeError)
    assert "invoice:bad|payment_status" not in facts
    assert "invoice:bad|payment_status" not in proc._latest


def test_a_fact_whose_checking_raises_at_arrival_is_rejected_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fault in the arrival check: the claim's fact is set aside with the claim listed."""
    real = processor_module.check

    def check(c: Claim, *args: Any) -> Any:
        if c.value == "unpaid":
            raise ValueError("bad check")
        return real(c, *args)

    monkeypatch.setattr(processor_module, "check", check)
    proc = PartitionProcessor(policy_with(), 0, {})
    first = proc.on_claim(claim("p1", "paid"))
    second = proc.on_claim(claim("p2", "unpaid"))
    (record,) = [d.record for d in second.decisions]
    assert [] == first.quarantined
    assert ("rejected", ["p1", "p2"]) == (
        record["outcome"],
        [c["claim_id"] for c in record["claims"]],
    )
    assert "internal_error: ValueError: bad check" == record["reason"]
    after = proc.on_claim(claim("p3", "paid", T0 + SECOND))
    assert [] == after.quarantined
    assert [("resolved", ["p3"])] == [
        (r["outcome"], [c["claim_id"] for c in r["claims"]])
        for r in decided([after, proc.on_tick(T0 + 10 * SECOND)])["invoice:1|payment_status"]
    ]


def test_a_claim_stale_on_arrival_is_listed_stale_in_its_facts_next_decision() -> None:
    """Past freshness + grace (60 s + 30 s) when it arrives: decided `insufficient`, then pruned."""
    facts: dict[str, FactState] = {}
    proc = PartitionProcessor(policy_with(), 0, facts)
    proc.on_tick(T0 + 200 * SECOND)
    arrival = proc.on_claim(claim("old", "paid", T0 + 100 * SECOND))
    assert [] == arrival.dead_letters
    result = proc.on_tick(T0 + 205 * SECOND)
    (record,) = decided([result])["invoice:1|payment_status"]
    assert ("insufficient", "degrade") == (record["outcome"], record["action"])
    assert [("old", "stale")] == [(c["claim_id"], c["disposition"]) for c in record["claims"]]
    proc.on_claim(claim("new", "paid", T0 + 206 * SECOND))
    assert ["new"] == [c.claim_id for c in facts["invoice:1|payment_status"].claims]


def test_a_late_claim_beside_a_fresh_one_is_listed_stale() -> None:
    """A fresh claim decides; the late one is in the same decision as `stale`."""
    proc = PartitionProcessor(policy_with(), 0, {})
    proc.on_tick(T0 + 200 * SECOND)
    proc.on_claim(claim("fresh", "paid", T0 + 199 * SECOND))
    proc.on_claim(claim("old", "unpaid", T0 + 10 * SECOND))
    (record,) = decided([proc.on_tick(T0 + 205 * SECOND)])["invoice:1|payment_status"]
    assert {"fresh": "won", "old": "stale"} == {
        c["claim_id"]: c["disposition"] for c in record["claims"]
    }


def test_a_late_claim_survives_a_restart_until_its_decision() -> None:
    """The ids awaiting their decision are stored with the fact."""
    proc = PartitionProcessor(policy_with(), 0, {})
    proc.on_tick(T0 + 200 * SECOND)
    proc.on_claim(claim("old", "paid", T0 + 10 * SECOND))
    state = proc.facts["invoice:1|payment_status"]
    restored = FactState.from_obj(state.to_obj())
    assert {"old"} == restored.unlisted
    again = PartitionProcessor(policy_with(), 0, {restored.key: restored}, T0 + 200 * SECOND)
    again.rebuild([restored])
    (record,) = decided([again.on_tick(T0 + 205 * SECOND)])["invoice:1|payment_status"]
    assert [("old", "stale")] == [(c["claim_id"], c["disposition"]) for c in record["claims"]]


def padded(cid: str, size: int, at_us: int = T0) -> Claim:
    """A claim whose envelope takes exactly `size` bytes as JSON."""
    base = claim(cid, "paid", at_us, note="")
    pad = size - claim_size(base)
    return claim(cid, "paid", at_us, note="x" * pad)


def test_claims_up_to_the_fact_budget_are_kept_and_one_past_it_refused() -> None:
    """At the bound: kept; one byte past: dead-lettered with the reason, its id not seen."""
    proc = PartitionProcessor(policy_with(), 0, {})
    each = MAX_FACT_CLAIM_BYTES // 4
    steps = [proc.on_claim(padded(f"c{i}", each, T0 + i)) for i in range(4)]
    assert [[], [], [], []] == [s.dead_letters for s in steps]
    past = proc.on_claim(padded("c4", 1, T0 + 5))
    assert ["over_budget"] == [e for e in past.events if e == "over_budget"]
    (reason,) = past.dead_letters
    assert f"claims hold {MAX_FACT_CLAIM_BYTES} bytes of at most {MAX_FACT_CLAIM_BYTES}" in reason
    state = proc.facts["invoice:1|payment_status"]
    assert (4, None) == (len(state.claims), state.seen_hash("c4"))
    assert MAX_FACT_CLAIM_BYTES == sum(claim_size(c) for c in state.claims)


@pytest.mark.parametrize(
    ("size", "refused"), [(MAX_CLAIM_ENCODED_BYTES, False), (MAX_CLAIM_ENCODED_BYTES + 1, True)]
)
def test_one_claim_past_the_claim_byte_limit_is_refused(size: int, refused: bool) -> None:
    """A claim whose envelope passes MAX_CLAIM_ENCODED_BYTES as JSON is refused at arrival."""
    result = PartitionProcessor(policy_with(), 0, {}).on_claim(padded("big", size))
    assert refused == any("limit of one claim" in r for r in result.dead_letters)
