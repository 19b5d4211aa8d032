"""Dead-lettered claims on a real broker: named in `DecisionTimeout`, shown by `claimwatch dlq`.

A claim nested deeper than a worker reads passes the client's model and is dead-lettered by
the worker while it decodes the record: no decision will list it and no fact page knows
it, so only the dead-letter topic can say what became of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from datetime import UTC, datetime
from typing import Any

import pytest
from claimwatch import Client, DecisionTimeout, WorkerUnavailable
from claimwatch.client.decisions import DecisionTail
from claimwatch.wire.topics import TopicNames, ensure_topics

from tests.support.claims import envelope
from tests.support.kafka import (
    CLAIMWATCH,
    REPO,
    Workers,
    ago,
    delete_topics,
    free_port,
    publish_raw,
    unique,
    wait_for_ticks,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = REPO / "examples" / "policy.yaml"
REASON = "nested deeper than 64 levels"


def _deep(depth: int = 70) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _dlq(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLAIMWATCH), "dlq", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


async def test_a_dead_lettered_claim_is_named_in_the_timeout_and_by_claimwatch_dlq(
    workers: Workers, kafka_bootstrap: str
) -> None:
    worker = await workers.launch(POLICY)
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    subject = unique("invoice:dlq")
    claim_id = unique("deep")
    claims = [
        envelope(
            claim_id,
            "billing-api",
            _deep(),
            subject=subject,
            field="payment_status",
            observed_at=ago(1),
        )
    ]
    async with Client(worker.url, kafka_bootstrap, worker.prefix) as client:
        with pytest.raises(DecisionTimeout) as caught:
            await client.decide(claims, timeout=4)
    key = f"{subject}|payment_status"
    assert ({claim_id: REASON}, {key: [claim_id]}) == (
        caught.value.dead_lettered,
        caught.value.pending,
    )
    assert f"Dead-lettered by the worker (see `claimwatch dlq`): claim {claim_id}: {REASON}" in (
        str(caught.value)
    )

    # a record of the dead-letter topic that no worker wrote: shown, saying so
    await publish_raw(kafka_bootstrap, worker.names.dlq, [(b"stray", b"not a claim")])
    shown = await asyncio.to_thread(
        _dlq, "--from-beginning", "--bootstrap", kafka_bootstrap, "--topic-prefix", worker.prefix
    )
    # one line per record, partition by partition: the worker's first, in key order
    lines = sorted(shown.stdout.splitlines(), key=lambda line: line.startswith("("))
    assert (0, 2) == (shown.returncode, len(lines)), shown.stderr
    origin, shown_key, reason, head = lines[0].split("\t")
    assert (f"{worker.prefix}claims[", key, REASON) == (
        origin[: len(worker.prefix) + 7],
        shown_key,
        reason,
    )
    assert head.startswith(f'{{"claim_id":"{claim_id}"')
    assert (
        "(origin unknown)\tstray\t(no claimwatch.reason header: not written by a claimwatch"
        " worker)\tnot a claim"
    ) == lines[1]
    assert f"2 dead letter(s) in {worker.prefix}claims.dlq" == shown.stderr.strip()

    as_json = await asyncio.to_thread(
        _dlq,
        "--from-beginning",
        "--json",
        env={"CLAIMWATCH_BOOTSTRAP": kafka_bootstrap, "CLAIMWATCH_TOPIC_PREFIX": worker.prefix},
    )
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    stamps = sorted(r["timestamp_ms"] for r in records)
    counts = []
    for moment in (stamps[0] - 1000, stamps[-1] + 1000):  # before both records, after both
        at = datetime.fromtimestamp(moment / 1000, UTC).isoformat()
        since = await asyncio.to_thread(
            _dlq, "--since", at, "--bootstrap", kafka_bootstrap, "--topic-prefix", worker.prefix
        )
        counts.append((since.returncode, len(since.stdout.splitlines())))
    assert [(0, 2), (0, 0)] == counts
    assert {(f"{worker.prefix}claims", key, REASON), (None, "stray", None)} == {
        (r["topic"], r["key"], r["reason"]) for r in records
    }


async def test_decide_is_worker_unavailable_at_once_and_sends_nothing(
    kafka_bootstrap: str,
) -> None:
    """No worker at the URL (its topics exist): told before anything is published."""
    prefix = unique("cwtest") + "."
    names = TopicNames(prefix)
    await ensure_topics(kafka_bootstrap, names, 1)
    url = f"http://127.0.0.1:{free_port()}"
    claim = envelope(
        unique("c"), "billing-api", "paid", subject=unique("invoice:x"), observed_at=ago(1)
    )
    try:
        async with Client(url, kafka_bootstrap, prefix) as client:
            with pytest.raises(WorkerUnavailable, match=f"^no worker at {url} "):
                await client.decide([claim], timeout=30)
        async with DecisionTail(kafka_bootstrap, names.claims, from_beginning=True) as tail:
            sent = [record async for batch in tail.to_end() for record in batch]
    finally:
        await delete_topics(kafka_bootstrap, [prefix])
    assert [] == sent
