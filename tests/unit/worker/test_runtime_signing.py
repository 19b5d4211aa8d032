"""The runtime edge with a policy that requires signatures: bad ones go to the DLQ only."""

from __future__ import annotations

from functools import partial
from typing import Any

import orjson
import pytest
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.signing import signed
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import Policy
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.claims.edge import ClaimsHandled, Runtime
from claimwatch.worker.metrics import dlq_reason_label

from tests.support.claims import envelope
from tests.support.clocks import SECOND, T0

NAMES = TopicNames("t.")
KEY = b"ledger-a-key"
FACT = b"invoice:1|payment_status"
HOME = partition_for(FACT, 4)


def signing_runtime() -> Runtime:
    """A runtime whose policy requires ledger-a to sign and decides on every claim."""
    policy = Policy.model_validate(
        {
            "policy_version": "sig-1",
            "defaults": {"settle": "0s"},
            "sources": {"ledger-a": {"authority": "system_of_record"}},
            "fields": {"payment_status": {"type": "enum", "values": ["paid", "unpaid"]}},
            "signing": {"ledger-a": {"env": "LEDGER_A_KEY"}},
        }
    )
    return Runtime(CompiledPolicy(policy, {"ledger-a": KEY}), NAMES, 4, {})


#: the one claim of these tests: ledger-a says invoice:1 is paid, a second after T0
ledger_a_claim = partial(
    envelope,
    claim_id="c1",
    source="ledger-a",
    value="paid",
    subject="invoice:1",
    observed_at=format_rfc3339(T0 + SECOND),
)


def decisions(handled: ClaimsHandled) -> list[dict[str, Any]]:
    """Decision records sent to the decisions topic."""
    return [orjson.loads(s.value) for s in handled.sends if s.topic == NAMES.decisions]


def dead_letters(handled: ClaimsHandled) -> list[str]:
    """Reasons of the records sent to the DLQ."""
    return [
        dict(s.headers)["claimwatch.reason"].decode() for s in handled.sends if s.topic == NAMES.dlq
    ]


FORGERIES = {
    "missing": ledger_a_claim(),
    "wrong key": signed(ledger_a_claim(), b"not-the-key"),
    "changed value": {**signed(ledger_a_claim(value="unpaid"), KEY), "value": "paid"},
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_bad_signature_goes_to_the_dlq_only_and_frees_the_id(case: str) -> None:
    """Missing, wrong-key and replayed-with-changed-value: DLQ, no decision, id unseen."""
    runtime = signing_runtime()
    bad = runtime.handle(HOME, 0, FACT, orjson.dumps(FORGERIES[case]))
    assert ([], ["bad_signature"]) == (
        decisions(bad),
        [dlq_reason_label(r) for r in dead_letters(bad)],
    )
    assert "bad_signature" in bad.events
    assert None is bad.claim  # not counted as an accepted claim
    assert FACT.decode() not in runtime.facts  # nothing stored: the id is not marked seen
    good = runtime.handle(HOME, 1, FACT, orjson.dumps(signed(ledger_a_claim(), KEY)))
    (decision,) = decisions(good)
    assert ("resolved", "paid", []) == (decision["outcome"], decision["value"], dead_letters(good))
    assert ["c1"] == [c["claim_id"] for c in decision["claims"]]


def test_every_forgery_in_a_row_then_the_genuine_claim_is_decided() -> None:
    """Three forged attempts at one id do not block the real claim that follows."""
    runtime = signing_runtime()
    for offset, case in enumerate(sorted(FORGERIES)):
        handled = runtime.handle(HOME, offset, FACT, orjson.dumps(FORGERIES[case]))
        assert [] == decisions(handled)
    good = runtime.handle(HOME, 3, FACT, orjson.dumps(signed(ledger_a_claim(), KEY)))
    assert ["paid"] == [d["value"] for d in decisions(good)]


def test_sources_not_named_in_signing_are_decided_unsigned() -> None:
    """Only the sources the policy names must sign."""
    runtime = signing_runtime()
    handled = runtime.handle(HOME, 0, FACT, orjson.dumps(ledger_a_claim(source="reporting")))
    assert (["paid"], []) == ([d["value"] for d in decisions(handled)], dead_letters(handled))


def test_replay_of_a_file_applies_the_same_check() -> None:
    """`claimwatch replay` decides only the genuine claim, as the worker did."""
    from claimwatch.audit.replay import Replayer

    replayer = Replayer(signing_runtime().policy, 4)
    for number, case in enumerate(sorted(FORGERIES), start=1):
        replayer.feed_line(orjson.dumps(FORGERIES[case]), "claims.jsonl", number)
    replayer.feed_line(orjson.dumps(signed(ledger_a_claim(), KEY)), "claims.jsonl", 4)
    replayer.finish()
    assert [("resolved", "paid", ["c1"])] == [
        (d["outcome"], d["value"], [c["claim_id"] for c in d["claims"]])
        for d in replayer.result.decisions
    ]
