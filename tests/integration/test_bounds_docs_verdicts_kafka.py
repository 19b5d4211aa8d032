"""Documents and verdicts at and past their bounds on the real broker, as the worker ships.

Each bound is met from the public topics: the process stays up (and /health 200), the
sender gets an answer, and other input is still answered.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.client.docs_client import DocsClient
from claimwatch.models.publish import PublishResult
from claimwatch.models.verdict import VerdictDecision

from tests.support.kafka import TopicReader, Workers, publish_raw, unique, write_policy
from tests.support.verdicts import BASELINE, PII, many, signal_record

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = """\
policy_version: bounds-kafka
argumentation:
  attack_rules:
    - {attacker_kind: pii_detected, attacked_kind: baseline, type: undercut}
    - {attacker_kind: noise, attacked_kind: noise, type: rebut}
  expected_checks:
    upload: [opa, pii-scanner]
  timeout: 3s
  remember: 60s
"""


async def test_documents_at_and_past_every_bound(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Versions past the cap answer 410; a body past the cap is rejected; others go on."""
    worker = await workers.launch(
        write_policy(tmp_path, POLICY), extra_env=(("CLAIMWATCH_DOC_MAX_VERSIONS", "3"),)
    )
    path, other = "bounds/a.md", "bounds/b.md"
    async with DocsClient(kafka_bootstrap, worker.prefix, worker.url, timeout=60.0) as docs:
        results = [await docs.publish(path, f"v{n + 1}\n", n) for n in range(4)]
        assert ["ok"] * 4 == [r["status"] for r in results]
        # a whole body at the limit, then an append past it (control characters take 6 bytes)
        at_limit = await docs.publish(other, "x" * (256 * 1024 - 2), 0)
        past = await docs.append(path, "\x01" * 44_000)
        after = await docs.publish(path, "v5\n", 4)
    assert ("ok", "rejected", "ok") == (at_limit["status"], past["status"], after["status"])
    PublishResult.model_validate(past)
    assert "over the limit of 262144 (CLAIMWATCH_DOC_MAX_BODY_BYTES)" in past["reason"]
    status, raw = await worker.get(f"/docs/{path}/v/1")
    assert 410 == status and b"keeps its latest 3 versions (3..5 now" in raw
    status, raw = await worker.get(f"/docs/{path}/v/3")
    assert (200, "v3\n") == (status, orjson.loads(raw)["body"])
    # a record past the request limit: dead-lettered, the worker goes on
    await publish_raw(kafka_bootstrap, worker.names.publish, [(path.encode(), b"{" * 300_000)])
    async with DocsClient(kafka_bootstrap, worker.prefix, worker.url, timeout=60.0) as docs:
        too_big = await docs.publish(other, "y" * 300_000, 1)
        assert "ok" == (await docs.publish(path, "v6\n", 5))["status"]
    assert "rejected" == too_big["status"] and "exceeds the 266240-byte" in too_big["reason"]
    assert worker.alive and 200 == await worker.health()


async def test_verdicts_at_and_past_every_bound(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Signals past the cap, and a signal ten years ahead: each request answered, others too."""
    worker = await workers.launch(
        write_policy(tmp_path, POLICY), extra_env=(("CLAIMWATCH_VERDICT_MAX_SIGNALS", "4"),)
    )
    now = datetime.now(UTC)
    at_bound, past, forged, genuine = (unique(n) for n in ("at", "past", "forged", "genuine"))
    noise = many(40, claim="c" * 4096)
    records = [signal_record(c, now, at_bound) for c in noise[:4]]
    records += [signal_record(c, now, past) for c in noise]
    records.append(signal_record(PII, now + timedelta(days=3650), forged))
    records += [
        signal_record(c, now + timedelta(milliseconds=100), genuine) for c in (BASELINE, PII)
    ]
    await publish_raw(kafka_bootstrap, worker.names.verdicts, records)
    wanted = {at_bound, past, forged, genuine}
    async with TopicReader(kafka_bootstrap, worker.names.verdicts_decisions) as reader:

        def keys(rs: list[Any]) -> set[str]:
            return {r.key.decode() for r in rs}

        await reader.wait_for(lambda rs: wanted <= keys(rs), 60.0, "every request decided")
        await asyncio.sleep(1.0)
        await reader.drain(idle=1.0)
        decided = {
            r.key.decode(): VerdictDecision.model_validate_json(r.value) for r in reader.records
        }
        counts = {k: sum(1 for r in reader.records if r.key.decode() == k) for k in wanted}
    assert dict.fromkeys(wanted, 1) == counts
    assert (True, 4) == (decided[at_bound].timed_out, len(decided[at_bound].arguments))
    assert decided[past].reason.startswith("the request has more than 4 signals, the limit")
    assert ("undecided", 4) == (decided[past].decision, len(decided[past].arguments))
    assert ["pii_moderate"] == [r.id for r in decided[forged].refused]
    assert decided[forged].refused[0].reason.startswith("ahead_of_clock: observed 3650d")
    assert ("modify", False) == (decided[genuine].decision, decided[genuine].timed_out)
    assert worker.alive and 200 == await worker.health()
