"""Policy verdicts on the real broker: checks of one request in, one decision per request out."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from claimwatch.core.argue import VerdictArgument
from claimwatch.models.verdict import VerdictDecision

from tests.support.kafka import (
    Record,
    TopicReader,
    Workers,
    publish_raw,
    unique,
    write_policy,
)
from tests.support.verdicts import BASELINE, PII, TRUST, signal_record

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = """\
policy_version: verdicts-kafka
argumentation:
  attack_rules:
    - {attacker_kind: pii_detected, attacked_kind: baseline, type: undercut}
    - {attacker_kind: trusted_domain, attacked_kind: pii_detected, type: undermine}
  expected_checks:
    upload: [opa, pii-scanner, knowledge-hub]
    "*": [opa, pii-scanner]
  timeout: 3s
  remember: 60s
"""

#: The worked example's three checks.
CHECKS = [BASELINE, PII, TRUST]


async def publish(
    bootstrap: str, topic: str, request_id: str, checks: list[VerdictArgument]
) -> None:
    """Send the signals of `checks` for one request, observed now, 100 ms apart."""
    now = datetime.now(UTC)
    records = [
        signal_record(c, now + timedelta(milliseconds=100 * i), request_id)
        for i, c in enumerate(checks)
    ]
    await publish_raw(bootstrap, topic, records)


def of(records: list[Record], request_id: str) -> list[dict[str, Any]]:
    """The decisions of one request, in log order."""
    return [r.json() for r in records if r.key == request_id.encode()]


async def test_three_checks_give_one_decision_with_the_attack_graph(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """All expected checks of a request arrived: one allow decision with the policy's attacks."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    request_id = unique("req")
    await publish(kafka_bootstrap, worker.names.verdicts, request_id, CHECKS)
    async with TopicReader(kafka_bootstrap, worker.names.verdicts_decisions) as reader:
        await reader.wait_for(lambda rs: bool(of(rs, request_id)), 60.0, "the decision")
        await asyncio.sleep(5.0)  # past the timeout: nothing more may come for the request
        await reader.drain(idle=1.0)
        decisions = of(reader.records, request_id)
    assert 1 == len(decisions)
    decision = VerdictDecision.model_validate(decisions[0])
    assert ("allow", "proceed", False, []) == (
        decision.decision,
        decision.action,
        decision.timed_out,
        decision.missing_checks,
    )
    assert ["baseline_allow", "knowledge_trust_0"] == decision.accepted
    expected_attacks = [
        ("knowledge_trust_0", "pii_moderate", "undermine"),
        ("pii_moderate", "baseline_allow", "undercut"),
    ]
    assert expected_attacks == sorted((a.attacker, a.attacked, a.type) for a in decision.attacks)
    labels = {a.id: a.label for a in decision.arguments}
    assert {"baseline_allow": "in", "knowledge_trust_0": "in", "pii_moderate": "out"} == labels


async def test_missing_check_gives_undecided_after_the_timeout(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Without the knowledge hub the request is decided `undecided` at the timeout: escalate."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    request_id = unique("req")
    await publish(kafka_bootstrap, worker.names.verdicts, request_id, CHECKS[:2])
    async with TopicReader(kafka_bootstrap, worker.names.verdicts_decisions) as reader:
        await reader.wait_for(lambda rs: bool(of(rs, request_id)), 60.0, "the undecided")
        await reader.drain(idle=2.0)
        decisions = of(reader.records, request_id)
    assert 1 == len(decisions)
    decision = VerdictDecision.model_validate(decisions[0])
    assert ("undecided", "escalate", True, ["knowledge-hub"]) == (
        decision.decision,
        decision.action,
        decision.timed_out,
        decision.missing_checks,
    )
    first = datetime.fromisoformat(decision.arguments[0].observed_at)
    assert first + timedelta(seconds=3) == datetime.fromisoformat(decision.decided_at)


async def test_invalid_signal_goes_to_the_dead_letter_topic(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A record that is not a verdict signal lands in the DLQ, naming the verdicts topic."""
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    await publish_raw(kafka_bootstrap, worker.names.verdicts, [(b"req-bad", b"{not json")])
    async with TopicReader(kafka_bootstrap, worker.names.dlq) as reader:
        records = await reader.wait_for(bool, 60.0, "a dead letter")
    assert [(b"req-bad", b"{not json")] == [(r.key, r.value) for r in records]
    assert worker.names.verdicts.encode() == records[0].headers["claimwatch.topic"]
