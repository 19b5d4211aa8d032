"""Signed claims on the real broker: forgeries reach the DLQ only, the genuine claim is decided."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from streams.client.publisher import Publisher
from streams.core.signing import signed, verify
from tests.support.claims import envelope
from tests.support.kafka import (
    CLAIMWATCH,
    TopicReader,
    Workers,
    ago,
    decisions_by_fact,
    delete_topics,
    read_topic,
    unique,
    wait_for_ticks,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

KEY = "integration-ledger-key"
POLICY = """\
policy_version: signing-it-1
defaults: {settle: 0s}
sources:
  ledger:    {authority: system_of_record, lineage: ledger}
  reporting: {authority: derived, lineage: reporting}
fields:
  payment_status: {type: enum, values: [paid, unpaid], freshness: 5m}
signing:
  ledger: {env: CW_IT_LEDGER_KEY}
"""
SUBJECT = "invoice:SIG-1"
FACT = f"{SUBJECT}|payment_status"


async def test_bad_signatures_go_to_the_dlq_and_the_genuine_claim_is_decided(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forged claims go to the DLQ undecided; the genuine claim with their id is then decided.

    Missing, wrong-key and changed-value signatures are `bad_signature`; the id is never
    marked seen, so the correctly signed claim that follows with the same id is decided.
    """
    monkeypatch.setenv("CW_IT_LEDGER_KEY", KEY)  # the worker subprocess inherits it
    worker = await workers.launch(write_policy(tmp_path, POLICY))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    genuine = signed(
        envelope("sig-1", "ledger@eu", "unpaid", subject=SUBJECT, observed_at=ago(1)), KEY.encode()
    )
    forgeries = [
        envelope("sig-1", "ledger@eu", "paid", subject=SUBJECT, observed_at=ago(1)),  # missing
        signed(  # wrong key
            envelope("sig-1", "ledger@eu", "paid", subject=SUBJECT, observed_at=ago(1)),
            b"a-guessed-key",
        ),
        {**genuine, "value": "paid"},  # a real signature replayed with a changed value
    ]
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish_many(forgeries)
    async with TopicReader(kafka_bootstrap, worker.names.dlq) as dlq:
        await dlq.wait_for(lambda records: len(records) >= 3, 45, "three dead letters")
    reasons = [r.headers["claimwatch.reason"].decode() for r in dlq.records]
    assert 3 == len(reasons)
    assert all(r.startswith("bad_signature: ") for r in reasons), reasons
    assert ["missing", "does not match", "does not match"] == [
        "missing" if "missing" in r else "does not match" if "does not match" in r else r
        for r in reasons
    ]

    async with Publisher(kafka_bootstrap, worker.prefix, signing_key=KEY.encode()) as publisher:
        await publisher.publish_many(
            [envelope("sig-1", "ledger@eu", "unpaid", subject=SUBJECT, observed_at=ago(1))]
        )
    async with TopicReader(kafka_bootstrap, worker.names.decisions) as decisions:
        await decisions.wait_for(lambda records: len(records) >= 1, 45, "a decision")
        await decisions.drain(idle=1.5)
    (history,) = decisions_by_fact(decisions.records).values()
    (decision,) = history  # nothing was decided from the forged claims
    assert (FACT, "resolved", "unpaid") == (
        f"{decision['subject']}|{decision['field']}",
        decision["outcome"],
        decision["value"],
    )
    (considered,) = decision["claims"]
    assert ("sig-1", "won") == (considered["claim_id"], considered["disposition"])
    assert 64 == len(considered["signature"])

    assert 3 == len(await read_topic(kafka_bootstrap, worker.names.dlq, idle=0.5))
    status, body = await worker.get("/metrics")
    assert 200 == status
    assert 'claimwatch_dlq_messages_total{reason="bad_signature"} 3.0' in body.decode()
    assert 'claimwatch_stream_events_total{event="bad_signature"} 3.0' in body.decode()


async def test_publish_command_signs_with_the_key_in_an_env_var(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """`claimwatch publish --sign-key-env` sends claims whose signature verifies; unset: exit 2."""
    prefix = unique("cwsign") + "."
    path = tmp_path / "claims.jsonl"
    path.write_text(
        "".join(
            json.dumps(envelope(v, "ledger@eu", v, subject=SUBJECT, observed_at=ago(1))) + "\n"
            for v in ("paid", "unpaid")
        )
    )
    env = {**os.environ, "CW_IT_PUBLISH_KEY": KEY}

    def publish(*flags: str) -> subprocess.CompletedProcess[str]:
        where = ["--bootstrap", kafka_bootstrap, "--topic-prefix", prefix]
        return subprocess.run(
            [str(CLAIMWATCH), "publish", *where, *flags, str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    try:
        unset = await asyncio.to_thread(publish, "--sign-key-env", "CW_IT_NO_SUCH_KEY")
        assert (2, "") == (unset.returncode, unset.stdout)
        assert "CW_IT_NO_SUCH_KEY is not set" in unset.stderr
        sent = await asyncio.to_thread(publish, "--sign-key-env", "CW_IT_PUBLISH_KEY")
        assert 0 == sent.returncode, sent.stderr
        records = await read_topic(kafka_bootstrap, f"{prefix}claims", idle=0.5)
        claims = sorted((r.json() for r in records), key=lambda c: c["claim_id"])
        assert ["paid", "unpaid"] == [c["claim_id"] for c in claims]
        assert [None, None] == [verify(c, KEY.encode()) for c in claims]
    finally:
        await delete_topics(kafka_bootstrap, [prefix])
