"""The claims edge: a set-aside fact's claims to the DLQ, its state gone; refusals named."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from claimwatch.core import processor as processor_module
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.size import MAX_FACT_CLAIM_BYTES
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.wire.codec import loads
from claimwatch.worker.claims import facts as facts_module
from claimwatch.worker.claims import records as claims_records
from claimwatch.worker.claims.edge import ClaimsHandled, Runtime
from claimwatch.worker.claims.facts import MAX_STATE_BYTES, TableFacts
from claimwatch.worker.claims.records import MAX_RECORD_BYTES
from claimwatch.worker.ticks import TICK_KEY, tick_value

from tests.support.claims import NAMES, claim_line, envelope
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with

KEY = b"invoice:bad|payment_status"


def line(cid: str, value: str, subject: str = "invoice:bad", at_us: int = T0) -> bytes:
    return claim_line(cid, "ledger-a", value, subject=subject, observed_at=format_rfc3339(at_us))


def feed(runtime: Runtime, records: list[tuple[bytes, bytes]]) -> list[ClaimsHandled]:
    """Each (key, value) to partition 0 of a one-partition runtime, then a tick past the windows."""
    handled = [runtime.handle(0, i, key, value) for i, (key, value) in enumerate(records)]
    handled.append(runtime.handle(0, len(records), TICK_KEY, tick_value(T0 + 30 * SECOND)))
    return handled


def dlq(handled: list[ClaimsHandled]) -> list[tuple[bytes | None, Any, str]]:
    return [
        (s.key, loads(s.value), dict(s.headers)["claimwatch.reason"].decode())
        for h in handled
        for s in h.sends
        if s.topic == NAMES.dlq
    ]


def records_of(handled: list[ClaimsHandled]) -> dict[str, dict[str, Any]]:
    return {
        f"{r['subject']}|{r['field']}": r for h in handled for r in (d.record for d in h.decided)
    }


def test_a_set_aside_facts_claims_go_to_the_dlq_one_each_under_the_fact_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deciding raises: each claim dead-lettered with the reason; the fact's table entry gone."""
    real = processor_module.resolve_entries

    def resolve_entries(claims: Any, *args: Any, **kwargs: Any) -> Any:
        claims = list(claims)
        if any(c.value == "unpaid" for c in claims):
            raise RuntimeError("boom")
        return real(claims, *args, **kwargs)

    monkeypatch.setattr(processor_module, "resolve_entries", resolve_entries)
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy_with(), NAMES, 1, table, alerts=False)
    bad = [(KEY, line("p1", "paid")), (KEY, line("p2", "unpaid"))]
    good = (b"invoice:good|payment_status", line("ok", "paid", "invoice:good"))
    handled = feed(runtime, [*bad, good])
    reason = "internal_error: RuntimeError: boom"
    assert [(KEY, "p1", reason), (KEY, "p2", reason)] == [
        (k, v["claim_id"], r) for k, v, r in dlq(handled)
    ]
    assert [] == [r for h in handled for r in h.refused]  # their decision lists them
    assert {
        "invoice:bad|payment_status": "rejected",
        "invoice:good|payment_status": "resolved",
    } == {k: r["outcome"] for k, r in records_of(handled).items()}
    assert KEY not in table
    assert [["p1", "p2"]] == [
        [c.claim_id for c in q.claims] for h in handled for q in h.quarantined
    ]


def test_the_claim_being_handled_is_dead_lettered_with_its_bytes_as_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A claim whose arrival fails its fact: its own DLQ copy is the record's value."""
    real = processor_module.check

    def check(claim: Any, *args: Any) -> Any:
        if claim.value == "unpaid":
            raise ValueError("bad check")
        return real(claim, *args)

    monkeypatch.setattr(processor_module, "check", check)
    runtime = Runtime(policy_with(), NAMES, 1, {}, alerts=False)
    sent = line("p2", "unpaid")
    handled = [runtime.handle(0, 0, KEY, line("p1", "paid")), runtime.handle(0, 1, KEY, sent)]
    copies = {
        v["claim_id"]: s.value
        for h in handled
        for s in h.sends
        if s.topic == NAMES.dlq
        for v in [loads(s.value)]
    }
    assert sent == copies["p2"]
    assert orjson.loads(line("p1", "paid")) == orjson.loads(copies["p1"])


def test_a_fact_whose_state_cannot_be_written_is_set_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """Storing one fact fails: that fact is rejected and dropped, the others are written."""
    real = facts_module.encode_state

    def encode_state(key: str, state: Any) -> bytes:
        if key.startswith("invoice:bad"):
            raise facts_module.StateTooLarge("too big to store")
        return real(key, state)

    monkeypatch.setattr(facts_module, "encode_state", encode_state)
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy_with(), NAMES, 1, table, alerts=False)
    handled = feed(
        runtime,
        [
            (KEY, line("p1", "paid")),
            (b"invoice:good|payment_status", line("ok", "paid", "invoice:good")),
        ],
    )
    (record,) = [
        r for h in handled for r in (d.record for d in h.decided) if r["subject"] == "invoice:bad"
    ]
    assert ("rejected", "internal_error: StateTooLarge: too big to store") == (
        record["outcome"],
        record["reason"],
    )
    assert KEY not in table
    assert b"invoice:good|payment_status" in table


def test_a_decision_record_past_the_size_limit_is_replaced_by_a_rejected_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ordinary record too large to send: the fact is decided rejected instead, and sent."""
    monkeypatch.setattr(claims_records, "MAX_RECORD_BYTES", 900)
    runtime = Runtime(policy_with(), NAMES, 1, {}, alerts=False)
    big = claim_line(
        "p1",
        "ledger-a",
        "paid",
        subject="invoice:bad",
        observed_at=format_rfc3339(T0),
        note="x" * 600,
    )
    handled = feed(runtime, [(KEY, big)])
    (record,) = [d.record for h in handled for d in h.decided]
    assert "rejected" == record["outcome"]
    assert record["reason"].startswith("internal_error: RecordTooLarge: decision record of ")
    assert all(len(b) <= 900 for h in handled for b in h.bodies)


def test_a_conflicting_duplicate_is_named_in_refused() -> None:
    """A claim id reused with other content: DLQ only, and (claim_id, reason) in `refused`."""
    runtime = Runtime(policy_with(), NAMES, 1, {}, alerts=False)
    handled = feed(runtime, [(KEY, line("c1", "paid")), (KEY, line("c1", "unpaid"))])
    assert [("c1", "claim_id 'c1' was already used for this fact with other content")] == [
        r for h in handled for r in h.refused
    ]


def test_a_text_fact_at_its_byte_budget_stays_below_the_record_and_state_limits(
    policy: CompiledPolicy,
) -> None:
    """Distinct passages up to the budget: the record and the state fit; the next is refused."""
    table: dict[bytes, bytes] = {}
    runtime = Runtime(policy, NAMES, 1, table, TableFacts(table), alerts=False)
    key = b"doc:1|summary"
    handled = []
    for i in range(12):
        words = " ".join(f"w{i}x{j}" for j in range(4000))  # distinct passages: all listed
        body = envelope(
            f"c{i}",
            f"src{i}",
            words,
            subject="doc:1",
            field="summary",
            observed_at=format_rfc3339(T0 + i),
        )
        handled.append(runtime.handle(0, i, key, orjson.dumps(body)))
    handled.append(runtime.handle(0, 12, TICK_KEY, tick_value(T0 + 30 * SECOND)))
    refused = [r for h in handled for r in h.refused]
    assert refused and all("budget" in reason for _cid, reason in refused)
    (body,) = [b for h in handled for b in h.bodies]
    assert len(body) < MAX_RECORD_BYTES
    assert len(table[key]) < MAX_STATE_BYTES
    kept = len(loads(body)["claims"])
    assert 12 == kept + len(refused)
    assert MAX_FACT_CLAIM_BYTES // 80_000 <= kept  # each counts its value twice (as canonical)


def test_a_stored_state_that_does_not_decode_is_set_aside_at_the_rebuild() -> None:
    """A corrupt table entry: that fact is decided rejected and dropped; the partition decides."""
    table: dict[bytes, bytes] = {KEY: b'{"s": "invoice:bad", "f": "payment_status"}'}
    runtime = Runtime(policy_with(), NAMES, 1, table, alerts=False)
    handled = feed(runtime, [(b"invoice:good|payment_status", line("ok", "paid", "invoice:good"))])
    assert {
        "invoice:bad|payment_status": "rejected",
        "invoice:good|payment_status": "resolved",
    } == {k: r["outcome"] for k, r in records_of(handled).items()}
    assert KEY not in table
