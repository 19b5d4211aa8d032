"""Signed claims on the real broker: forgeries reach the DLQ only, the genuine claim is decided."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from claimwatch.client.publisher import Publisher
from claimwatch.core.signing import signed, verify

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

KEY = "integration-ledger-key-of-32-bytes!"
#: The sources and the field of both policies below; only `ledger` signs its claims.
SOURCES = """\
defaults: {settle: 0s}
sources:
  ledger:    {authority: system_of_record, lineage: ledger}
  reporting: {authority: derived, lineage: reporting}
fields:
  payment_status: {type: enum, values: [paid, unpaid], freshness: 5m}
"""
POLICY = (
    "policy_version: signing-it-1\n"
    + SOURCES
    + """\
signing:
  ledger: {env: CW_IT_LEDGER_KEY}
"""
)
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


OLD_KEY = "rotation-old-key-".ljust(32, "o")
NEW_KEY = "rotation-new-key-".ljust(40, "n")
ROTATING = (
    "policy_version: signing-it-rotation\n"
    + SOURCES
    + """\
signing:
  ledger:
    keys:
      - {env: CW_IT_OLD_KEY}
      - {kid: "2026-12", env: CW_IT_NEW_KEY}
"""
)


async def test_keys_rotate_without_a_flag_day_on_the_real_broker(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old (no kid) and new (kid 2026-12) keys are both accepted, from every region of ledger.

    A claim naming an unknown kid, and one whose kid was swapped after signing, go to the
    DLQ with `bad_signature` (the first naming the kid); so does an unsigned claim from a
    region the bare `ledger` entry covers.
    """
    monkeypatch.setenv("CW_IT_OLD_KEY", OLD_KEY)
    monkeypatch.setenv("CW_IT_NEW_KEY", NEW_KEY)
    worker = await workers.launch(write_policy(tmp_path, ROTATING))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)

    def claim(cid: str, source: str, value: str) -> dict[str, object]:
        return envelope(cid, source, value, subject=f"invoice:{cid}", observed_at=ago(1))

    swapped = signed(claim("rot-5", "ledger", "paid"), NEW_KEY.encode(), "2026-12")
    refused = [
        signed(claim("rot-3", "ledger@eu", "paid"), NEW_KEY.encode(), "2027-03"),
        {k: v for k, v in swapped.items() if k != "kid"},  # kid dropped: the old key checks it
        claim("rot-4", "ledger@us", "paid"),  # unsigned region
    ]
    async with Publisher(kafka_bootstrap, worker.prefix) as publisher:
        await publisher.publish_many(refused)
    async with (
        Publisher(kafka_bootstrap, worker.prefix, signing_key=OLD_KEY.encode()) as old,
        Publisher(
            kafka_bootstrap, worker.prefix, signing_key=NEW_KEY.encode(), signing_kid="2026-12"
        ) as new,
    ):
        await old.publish_many([claim("rot-1", "ledger@eu", "paid")])
        await new.publish_many([claim("rot-2", "ledger@us", "unpaid")])
    async with TopicReader(kafka_bootstrap, worker.names.decisions) as decisions:
        await decisions.wait_for(lambda records: len(records) >= 2, 45, "two decisions")
        await decisions.drain(idle=1.5)
    decided = {
        d["claims"][0]["claim_id"]: (d["outcome"], d["value"], d["claims"][0].get("kid"))
        for history in decisions_by_fact(decisions.records).values()
        for d in history
    }
    assert {
        "rot-1": ("resolved", "paid", None),
        "rot-2": ("resolved", "unpaid", "2026-12"),
    } == decided
    async with TopicReader(kafka_bootstrap, worker.names.dlq) as dlq:
        await dlq.wait_for(lambda records: len(records) >= 3, 45, "three dead letters")
        await dlq.drain(idle=1.0)
    reasons = sorted(r.headers["claimwatch.reason"].decode() for r in dlq.records)
    assert 3 == len(reasons), reasons
    assert all(r.startswith("bad_signature: ") for r in reasons), reasons
    assert any("unknown kid '2027-03' (known: '2026-12')" in r for r in reasons), reasons
    assert any("missing `signature` (source 'ledger@us')" in r for r in reasons), reasons
    assert any("does not match" in r and "'ledger'" in r for r in reasons), reasons


async def test_the_worker_refuses_a_short_key_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit 2 at start, one line naming the file, the key and the variable; no traceback."""
    env = {**os.environ, "CW_IT_SHORT_KEY": "too-short"}
    policy = write_policy(tmp_path, POLICY.replace("CW_IT_LEDGER_KEY", "CW_IT_SHORT_KEY"))
    done = await asyncio.to_thread(
        subprocess.run,
        [str(CLAIMWATCH), "worker", "--policy", str(policy)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert 2 == done.returncode, done.stderr
    assert f"{policy}:9: signing.ledger.env: the key in environment variable CW_IT_SHORT_KEY" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


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
        # no worker runs with this prefix: the command makes the topics itself
        where = ["--bootstrap", kafka_bootstrap, "--topic-prefix", prefix, "--create-topics"]
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
