"""The detectors at and past their bounds, on the real broker (issue 40, item 9).

`alerts.input` is an internal topic, but any client of the broker can write it: its
records are validated like a public topic's. Records past a bound (entries per record,
contradicting sources per entry, name length) and records that are not JSON go to the
DLQ with a reason; records at the bounds are taken in; the worker stays up, claims are
still decided promptly, and a lagging replica still raises its alert afterwards.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.core.alerts.entry import MAX_ENTRIES, MAX_SOURCES_PER_ENTRY
from claimwatch.core.alerts.shape import MAX_NAME_CHARS

from tests.support.claims import envelope
from tests.support.incidents import LAG_POLICY, lagging_replica
from tests.support.kafka import (
    Record,
    TopicReader,
    Workers,
    ago,
    publish_raw,
    unique,
    wait_for_ticks,
    write_policy,
)
from tests.support.probes import publish_until_decided

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

#: A field no claim names: the records at the bounds feed its detectors, not payment_status's.
PROBE = "probe_field"
#: Seconds a claim published right after the records may take to be decided.
DECIDED_WITHIN_S = 10.0


def entry(n: int, sources: int, fact: str | None = None) -> list[Any]:
    """One entry entering conflict with `sources` contradicting sources, and one observation."""
    clock = int(time.time() * 1_000_000)
    digests = {f"src-{s:03d}": f"{(n * 131 + s) % 7:016x}" for s in range(sources)}
    observation = ["src-000", clock, 0, None, 0]
    return [clock, fact or f"probe:{n}|{PROBE}", [f"dec_{n}", digests], [observation]]


def record(entries: list[list[Any]], field: str = PROBE) -> bytes:
    return orjson.dumps({"field": field, "entries": entries})


#: Past a bound: (what, the record, a part of the DLQ reason).
PAST = [
    ("entries", record([entry(n, 1) for n in range(MAX_ENTRIES + 1)]), "`entries` must be"),
    ("sources", record([entry(0, MAX_SOURCES_PER_ENTRY + 1)]), "contradicting sources"),
    ("fact name", record([entry(0, 2, "f" * (MAX_NAME_CHARS + 1))]), "the fact must be"),
    ("not JSON", b'{"field": "probe_field", "entries": [', "not an alerts input"),
]
#: At the bounds: every one is taken in.
AT = [
    record([entry(n, 4) for n in range(MAX_ENTRIES)]),
    record([entry(0, MAX_SOURCES_PER_ENTRY)]),
    record([entry(0, 2, "f" * MAX_NAME_CHARS)], field="g" * 5000),  # a long field is clipped
]


def reasons(records: list[Record], topic: str) -> list[str]:
    """The DLQ reasons of the records that came from `topic`."""
    return [
        r.headers["claimwatch.reason"].decode()
        for r in records
        if r.headers.get("claimwatch.topic") == topic.encode()
    ]


async def test_alerts_input_past_its_bounds_is_dead_lettered_and_the_detectors_go_on(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Four bad records to the DLQ, three at the bounds taken in; claims decided; alert fires.

    The records past the bounds are dead-lettered whole (their bytes, the reason, the
    origin); the three at the bounds are not; a bad record sent after them comes last.
    """
    worker = await workers.launch(write_policy(tmp_path, LAG_POLICY))
    await wait_for_ticks(kafka_bootstrap, worker.prefix)
    topic = worker.names.alerts_input
    assert all(len(body) < 1_000_000 for body in [*(p[1] for p in PAST), *AT])

    await publish_raw(kafka_bootstrap, topic, [(PROBE.encode(), p[1]) for p in PAST])
    # the records at the bounds, then a bad one after them on the same partition: its
    # dead letter shows they were all handled first
    sentinel = b'"after the records at the bounds"'
    await publish_raw(kafka_bootstrap, topic, [(PROBE.encode(), body) for body in [*AT, sentinel]])
    probe = envelope(unique("c"), "billing-api", "paid", subject=unique("inv"), observed_at=ago(1))
    sent = time.monotonic()
    await publish_until_decided(kafka_bootstrap, worker, [probe], "the probe claim decided")
    decided_s = time.monotonic() - sent

    async with TopicReader(kafka_bootstrap, worker.names.dlq) as dlq:
        await dlq.wait_for(lambda rs: len(reasons(rs, topic)) > len(PAST), 60.0, "the bad records")
        await dlq.drain(idle=2.0)
    letters = [r for r in dlq.records if r.headers.get("claimwatch.topic") == topic.encode()]
    assert len(PAST) + 1 == len(letters), reasons(letters, topic)
    assert sentinel == letters[-1].value
    for (what, body, needle), letter in zip(PAST, letters, strict=False):
        reason = letter.headers["claimwatch.reason"].decode()
        assert needle in reason and reason.startswith("not an alerts input"), (what, reason)
        assert body == letter.value
    assert worker.alive, f"the worker exited:\n{worker.log[-4000:]}"
    assert 200 == await worker.health()
    assert decided_s < DECIDED_WITHIN_S, decided_s

    # the detectors still take in decisions: a lagging replica raises its alert
    await lagging_replica(kafka_bootstrap, worker.prefix)

    def paged(records: list[Record]) -> bool:
        return any(
            a["kind"] == "replica_lag" and a["source"] == "reporting-replica"
            for a in (r.json() for r in records)
        )

    async with TopicReader(kafka_bootstrap, worker.names.alerts) as alerts:
        await alerts.wait_for(paged, 60.0, "a replica_lag alert after the bad records")
    assert worker.alive and 200 == await worker.health()
    print(f"probe claim decided {decided_s:.2f}s after the records at and past the bounds")
