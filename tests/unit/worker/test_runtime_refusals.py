"""The runtime names the claims it dead-letters with no decision to come (their waiters' 422).

A claim its fact keeps (one that breaks its field's contract is decided `rejected`, its DLQ
record a copy) is not refused: its waiters get that decision.
"""

from __future__ import annotations

import orjson
import pytest
from claimwatch.core.signing import signed
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.wire.topics import partition_for
from claimwatch.worker.claims.edge import Runtime

from tests.support.claims import NAMES, claim_line
from tests.support.clocks import SECOND, T0
from tests.support.policies import policy_with
from tests.unit.worker.test_runtime_signing import FORGERIES, KEY, ledger_a_claim, signing_runtime

FACT = b"invoice:1|payment_status"
HOME = partition_for(FACT, 4)
AT = format_rfc3339(T0 + SECOND)


def _line(claim_id: str, value: str, **changes: object) -> bytes:
    return claim_line(claim_id, "ledger-a", value, subject="invoice:1", observed_at=AT, **changes)


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_a_bad_signature_is_refused_with_its_reason(case: str) -> None:
    """The DLQ reason is the refusal's reason."""
    handled = signing_runtime().handle(HOME, 0, FACT, orjson.dumps(FORGERIES[case]))
    (dead,) = [s for s in handled.sends if s.topic == NAMES.dlq]
    reason = dict(dead.headers)["claimwatch.reason"].decode()
    assert [("c1", reason)] == handled.refused
    assert reason.startswith("bad_signature: ")


def test_an_id_reused_with_other_content_is_refused_and_a_redelivery_is_not() -> None:
    """The first claim is kept; the same id with another value is refused, the same bytes not."""
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, {})
    first = runtime.handle(HOME, 0, FACT, _line("c1", "paid"))
    again = runtime.handle(HOME, 1, FACT, _line("c1", "paid"))
    other = runtime.handle(HOME, 2, FACT, _line("c1", "unpaid"))
    assert ([], []) == (first.refused, again.refused)
    assert [("c1", "claim_id 'c1' was already used for this fact with other content")] == (
        other.refused
    )


def test_a_claim_kept_and_decided_rejected_is_not_refused() -> None:
    """A value the field does not allow: DLQ copy, decided `rejected`, no refusal."""
    runtime = Runtime(policy_with(settle="0s"), NAMES, 4, {})
    handled = runtime.handle(HOME, 0, FACT, _line("c1", "settled-ish"))
    assert {NAMES.decisions, NAMES.dlq} == ({s.topic for s in handled.sends})
    assert [] == handled.refused
    assert ["rejected"] == [d.record["outcome"] for d in handled.decided]


def test_a_genuine_signed_claim_is_not_refused() -> None:
    """Signed with the source's key: decided, nothing refused."""
    runtime = signing_runtime()
    handled = runtime.handle(HOME, 0, FACT, orjson.dumps(signed(ledger_a_claim(), KEY)))
    assert ([], 1) == (handled.refused, len(handled.decided))
