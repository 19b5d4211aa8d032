"""`claimwatch replay` of a stream recorded through a live worker on a real Kafka broker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from claimwatch.audit import replay_topic
from claimwatch.audit.replay import Replayer
from claimwatch.audit.replay_request import Outputs, ReplayRequest
from claimwatch.client.publisher import Publisher
from claimwatch.core.freshness import stale_at
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.wire import kafka
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.input_record import Record
from claimwatch.worker.ticks import TICK_KEY

from tests.support.claims import envelope
from tests.support.kafka import (
    CLAIMWATCH,
    REPO,
    WorkerProcess,
    free_port,
    rfc3339,
    unique,
    wait_for_ticks,
    write_policy,
)

pytestmark = pytest.mark.kafka

PARTITIONS = 4
VALUES = ("paid", "unpaid", "overdue", "refunded")
KINDS = ("agree", "lag", "conflict", "existence", "no_evidence", "rejected")
BALANCE_BUDGET_US = 3_000_000
#: Claims published at or after this many seconds into the recording are "the later half".
MIDDLE_S = 5.0
LATE_END_S = 7.0
PAYMENT = "payment_status:   {type: enum, values: [paid, unpaid, overdue, refunded], "
POLICY_TEXT = f"""\
policy_version: replay-it-1
defaults: {{freshness: 5m, on_conflict: block, clock_skew: 5s, settle: 400ms, max_delay: 2s}}
sources:
  billing-api:       {{authority: system_of_record, lineage: ledger}}
  ledger-replica:    {{authority: cached,           lineage: ledger}}
  reporting-replica: {{authority: derived,          lineage: reporting}}
  scorer:            {{authority: derived,          lineage: scorer}}
  user:              {{authority: asserted}}
fields:
  {PAYMENT}freshness: 10m, consequential: true, owner: billing-api}}
  balance:          {{type: money, currency: USD, freshness: 3s, consequential: true}}
  risk_score:       {{type: number, tolerance: {{abs: 0.01}}, freshness: 6h,
                     on_conflict: present_with_timestamp,
                     authority: {{scorer: system_of_record, billing-api: derived}}}}
"""
#: The same policy with one field's freshness changed (and so a new version).
SHORTER_TEXT = POLICY_TEXT.replace("replay-it-1", "replay-it-2").replace(
    f"{PAYMENT}freshness: 10m", f"{PAYMENT}freshness: 1s"
)


# ---------------------------------------------------------------------------- the recording


@dataclass(frozen=True, slots=True)
class Planned:
    """A claim to publish `delay` seconds into the recording, observed `age` seconds before."""

    delay: float
    age: float
    claim: dict[str, Any]


@dataclass(slots=True)
class Recording:
    """A claim stream recorded through a live worker, which has been stopped since."""

    bootstrap: str
    prefix: str
    app_id: str
    policy: Path
    shorter: Path
    workdir: Path
    published: list[dict[str, Any]]
    delays: dict[str, float]
    middle_ms: int
    late_end_ms: int
    decisions: list[dict[str, Any]]
    live_topics: list[str]
    full: bytes = b""

    @property
    def names(self) -> TopicNames:
        return TopicNames(self.prefix)


def _payment_burst(n: int, burst: int) -> list[Planned]:
    """One observation of payment_status fact n: several sources answering a moment apart."""
    subject, kind = f"invoice:R-{n:02d}", KINDS[n % len(KINDS)]
    value, before = VALUES[(burst + n) % 4], VALUES[(burst + n - 1) % 4]
    members: list[tuple[str, float, dict[str, Any]]] = {
        "agree": [
            ("billing-api", 0.05, {"value": value}),
            ("ledger-replica", 0.15, {"value": value}),
            ("reporting-replica", 0.25, {"value": value}),
        ],
        "lag": [
            ("billing-api", 0.05, {"value": value}),
            ("reporting-replica", 0.3, {"value": before}),
        ],
        "conflict": [
            ("billing-api@us-east-1", 0.05, {"value": value, "lineage": "ledger-us"}),
            (
                "billing-api@eu-west-1",
                0.1,
                {"value": value if burst % 2 else before, "lineage": "ledger-eu"},
            ),
        ],
        "existence": [
            ("billing-api", 0.05, {"value": value}),
            (
                "billing-api@eu-west-1",
                0.1,
                {"status": "not_found", "lineage": "ledger-eu"}
                if burst % 2
                else {"value": value, "lineage": "ledger-eu"},
            ),
        ],
        "no_evidence": [
            ("billing-api", 0.05, {"status": "unavailable"}),
            ("reporting-replica", 0.1, {"status": "forbidden"}),
        ],
        "rejected": [("billing-api", 0.05, {"value": "bogus"})],
    }[kind]
    delay = 2.0 * burst + 0.04 * n
    fact = {"subject": subject, "observed_at": None}  # stamped when sent
    return [
        Planned(delay, age, envelope(f"{subject}/b{burst}/{i}", source, **fact, **extra))
        for i, (source, age, extra) in enumerate(members)
    ]


def _balance_burst(n: int, burst: int) -> list[Planned]:
    """A balance fact (3 s budget) observed only early on: it expires while the stream runs."""
    subject = f"account:R-{n:02d}"
    amount = 1000 + 10 * burst + n
    copied = amount - 10 if burst else amount
    delay = 0.3 + 1.5 * burst + 0.03 * n
    fact = {"subject": subject, "field": "balance", "observed_at": None}  # stamped when sent
    return [
        Planned(delay, age, envelope(f"{subject}/b{burst}/{source}", source, usd, **fact))
        for source, age, usd in (
            ("billing-api", 0.05, {"amount": amount, "currency": "USD", "minor_units": True}),
            ("ledger-replica", 0.2, {"amount": copied, "currency": "USD", "minor_units": True}),
        )
    ]


def _risk_burst(n: int, burst: int) -> list[Planned]:
    subject = f"customer:R-{n}"
    delay = (1.0 if burst == 0 else 6.5) + 0.05 * n
    fact = {"subject": subject, "field": "risk_score", "observed_at": None}  # stamped when sent
    return [
        Planned(delay, age, envelope(f"{subject}/b{burst}/{source}", source, **fact, **rest))
        for source, age, rest in (
            ("scorer", 0.05, {"status": "ok", "value": round(0.4 + 0.05 * burst + 0.01 * n, 3)}),
            ("billing-api", 0.1, {"status": "ok", "value": 0.9}),
        )
    ]


def _plan() -> list[Planned]:
    """About 320 claims over 44 facts and about 9 seconds."""
    planned = [p for n in range(24) for b in range(5) for p in _payment_burst(n, b)]
    planned += [p for n in range(12) for b in range(2) for p in _balance_burst(n, b)]
    planned += [p for n in range(8) for b in range(2) for p in _risk_burst(n, b)]
    return sorted(planned, key=lambda p: p.delay)


def _key(record: dict[str, Any]) -> str:
    return f"{record['subject']}|{record['field']}"


def _home(record: dict[str, Any]) -> int:
    return partition_for(_key(record).encode(), PARTITIONS)


async def _publish_in_real_time(
    bootstrap: str, prefix: str, plan: list[Planned]
) -> tuple[list[dict[str, Any]], int, int]:
    """Publish each claim at its delay, observed `age` before; also the MIDDLE_S/LATE_END_S marks.

    The marks are wall-clock times (ms) taken between two groups of sends, so every record
    stamped before a mark was planned before it, and every record after it, after it.
    """
    published: list[dict[str, Any]] = []
    marks: dict[float, int] = {}
    async with Publisher(bootstrap, prefix) as publisher:
        start = time.monotonic()
        for delay in sorted({p.delay for p in plan}):
            for mark in (MIDDLE_S, LATE_END_S):
                if delay >= mark and mark not in marks:
                    await publisher.flush()  # everything earlier is stamped before the mark
                    await asyncio.sleep(0.05)
                    marks[mark] = int(time.time() * 1000)
                    await asyncio.sleep(0.05)
            await asyncio.sleep(max(0.0, start + delay - time.monotonic()))
            now = datetime.now(UTC)
            for item in (p for p in plan if p.delay == delay):
                claim = {**item.claim, "observed_at": rfc3339(now - timedelta(seconds=item.age))}
                await publisher.publish(claim)
                published.append(claim)
            await publisher.flush()
    return published, marks[MIDDLE_S], marks[LATE_END_S]


def _decided_everything(decisions: list[dict[str, Any]], published: list[dict[str, Any]]) -> bool:
    """Every fact decided with its last claim; every balance fact expired to insufficient."""
    last_claim = {_key(c): c["claim_id"] for c in published}
    seen: dict[str, set[str]] = {}
    expired: set[str] = set()
    for record in decisions:
        ids = {c["claim_id"] for c in record["claims"]}
        seen.setdefault(_key(record), set()).update(ids)
        final = last_claim[_key(record)] in ids
        if record["field"] == "balance" and record["outcome"] == "insufficient" and final:
            expired.add(_key(record))
    balance = {k for k in last_claim if k.endswith("|balance")}
    return balance == expired and all(cid in seen.get(k, ()) for k, cid in last_claim.items())


async def _consume(bootstrap: str, topic: str) -> list[tuple[int, int, int, bytes | None, bytes]]:
    """Every record of a topic as (partition, offset, timestamp ms, key, value), no group."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        partitions = await kafka.topic_partitions(bootstrap, topic)
        tps = [TopicPartition(topic, p) for p in partitions]
        ends = await consumer.end_offsets(tps)
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        out: list[tuple[int, int, int, bytes | None, bytes]] = []
        deadline = time.monotonic() + 60
        while any([await consumer.position(tp) < ends[tp] for tp in tps]):
            assert True is (time.monotonic() < deadline)
            batches = await consumer.getmany(timeout_ms=500)
            for tp, messages in batches.items():
                out += [(tp.partition, m.offset, m.timestamp, m.key, m.value) for m in messages]
        return sorted(out, key=lambda r: (r[0], r[1]))
    finally:
        await consumer.stop()


async def _decisions_of(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    return [orjson.loads(value) for *_, value in await _consume(bootstrap, topic)]


async def _delete_topics(bootstrap: str, prefix: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


@pytest.fixture(scope="module")
async def recording(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Recording]:
    """A few hundred claims over ~9 s through a live worker, ticks after them, then SIGTERM."""
    workdir = tmp_path_factory.mktemp("replay-kafka")
    policy = write_policy(workdir, POLICY_TEXT)
    shorter = write_policy(workdir, SHORTER_TEXT, "shorter.yaml")
    worker = WorkerProcess(
        bootstrap=kafka_bootstrap,
        policy=policy,
        prefix=unique("cwreplay") + ".",
        app_id=unique("cwreplay-app"),
        web_port=free_port(),
        data_dir=workdir / "worker-data",
        log_path=workdir / "worker.log",
        partitions=PARTITIONS,
    )
    try:
        await worker.launch()
        await wait_for_ticks(kafka_bootstrap, worker.prefix)
        plan = _plan()
        published, middle_ms, late_end_ms = await _publish_in_real_time(
            kafka_bootstrap, worker.prefix, plan
        )
        decisions_topic = worker.names.decisions
        deadline = time.monotonic() + 120
        while not _decided_everything(
            await _decisions_of(kafka_bootstrap, decisions_topic), published
        ):
            in_time = time.monotonic() < deadline
            assert True is in_time, f"worker did not decide in time:\n{worker.log}"
            await asyncio.sleep(1.0)
        await asyncio.sleep(2.0)  # a few more ticks: nothing is pending any more
        stopped = worker.kill(signal.SIGTERM)
        assert (False, 0) == (worker.alive, stopped), worker.log
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            live = sorted(t for t in await admin.list_topics() if t.startswith(worker.prefix))
        finally:
            await admin.close()
        yield Recording(
            bootstrap=kafka_bootstrap,
            prefix=worker.prefix,
            app_id=worker.app_id,
            policy=policy,
            shorter=shorter,
            workdir=workdir,
            published=published,
            delays={p.claim["claim_id"]: p.delay for p in plan},
            middle_ms=middle_ms,
            late_end_ms=late_end_ms,
            decisions=await _decisions_of(kafka_bootstrap, decisions_topic),
            live_topics=live,
        )
    finally:
        worker.kill(signal.SIGTERM)
        await _delete_topics(kafka_bootstrap, worker.prefix)


# ---------------------------------------------------------------------------- helpers


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAIMWATCH_")}
    env.update(COLUMNS="200", NO_COLOR="1")
    return subprocess.run(
        [str(CLAIMWATCH), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
        env=env,
        cwd=cwd,
        check=False,
    )


def _topic_replay(rec: Recording, *args: str, policy: Path | None = None) -> list[str]:
    return [
        "replay",
        "--policy",
        str(policy or rec.policy),
        "--bootstrap",
        rec.bootstrap,
        "--topic-prefix",
        rec.prefix,
        *args,
    ]


def _lines(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def _per_fact(decisions: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Decisions per fact in order, a repeated decision id (at-least-once) dropped."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for record in decisions:
        if record["decision_id"] in seen:
            continue
        seen.add(record["decision_id"])
        grouped.setdefault(_key(record), []).append(record)
    return grouped


def _finals(decisions: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {key: history[-1] for key, history in _per_fact(decisions).items()}


async def _full_replay(rec: Recording) -> bytes:
    """The uninterrupted replay of the whole claims topic under the recording's policy (cached)."""
    if not rec.full:
        out = rec.workdir / "full.jsonl"
        proc = await asyncio.to_thread(
            _cli, *_topic_replay(rec, "--from-beginning", "--out", str(out)), cwd=rec.workdir
        )
        assert (0, b"", b"") == (proc.returncode, proc.stdout, proc.stderr)
        rec.full = out.read_bytes()
    return rec.full


async def _live_state(rec: Recording) -> tuple[dict[Any, Any], dict[Any, int]]:
    """The live group's committed offsets and the end offset of every live topic partition."""
    admin = AIOKafkaAdminClient(bootstrap_servers=rec.bootstrap)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(rec.app_id)
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(bootstrap_servers=rec.bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [
            TopicPartition(topic, p)
            for topic in rec.live_topics
            for p in await kafka.topic_partitions(rec.bootstrap, topic)
        ]
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    return {tp: (o.offset, o.metadata) for tp, o in committed.items()}, dict(ends)


# ---------------------------------------------------------------------------- tests


@pytest.mark.slow
async def test_replay_reproduces_the_recorded_decisions(recording: Recording) -> None:
    """The claims topic (ticks included) replayed under the live policy gives the same decisions."""
    replayed = _per_fact(_lines(await _full_replay(recording)))
    recorded = _per_fact(recording.decisions)
    assert recorded == replayed
    outcomes = {r["outcome"] for history in recorded.values() for r in history}
    assert {"resolved", "conflict", "insufficient", "rejected"} == outcomes
    balance = {k: h[-1]["outcome"] for k, h in recorded.items() if k.endswith("|balance")}
    assert {k: "insufficient" for k in balance} == balance
    assert 24 + 12 + 8 == len(recorded)


@pytest.mark.slow
async def test_diff_against_the_decisions_topic(recording: Recording) -> None:
    """With payment_status's budget cut to 1 s, exactly its facts that had evidence change."""
    changes, out = recording.workdir / "changes.jsonl", recording.workdir / "shorter.jsonl"
    args = ["--from-beginning", "--out", str(out), "--changes", str(changes)]
    args += ["--diff-against", recording.names.decisions]
    proc = await asyncio.to_thread(
        _cli, *_topic_replay(recording, *args, policy=recording.shorter), cwd=recording.workdir
    )
    assert (0, b"") == (proc.returncode, proc.stdout)

    before, after = _finals(recording.decisions), _finals(_lines(out.read_bytes()))
    fields = {"resolved": ["outcome", "canonical", "action"], "conflict": ["outcome"]}
    expected = {
        key: fields[record["outcome"]]
        for key, record in before.items()
        if key.endswith("|payment_status") and record["outcome"] in fields
    }
    listed = _lines(changes.read_bytes())
    assert expected == {c["fact"]: c["changed"] for c in listed}
    assert {key: (before[key]["decision_id"], after[key]["decision_id"]) for key in expected} == {
        c["fact"]: (c["old"]["decision_id"], c["new"]["decision_id"]) for c in listed
    }
    assert {"insufficient"} == {c["new"]["outcome"] for c in listed}
    payment = [k for k in before if k.endswith("|payment_status")]
    assert (24, 16) == (len(payment), len(expected))
    assert True is ("payment_status" in proc.stderr.decode())


@pytest.mark.slow
async def test_replay_leaves_the_live_group_and_topics_untouched(recording: Recording) -> None:
    """A replay (diff and topic output too) commits no live group offset, writes no live topic."""
    before = await _live_state(recording)
    committed, ends = before
    claims = {tp.partition for tp in committed if tp.topic == recording.names.claims}
    assert (set(range(PARTITIONS)), True) == (claims, sum(ends.values()) > 0)

    args = ["--from-beginning", "--out", str(recording.workdir / "untouched.jsonl")]
    args += ["--diff-against", recording.names.decisions, "--to-topic"]
    args += [f"{recording.prefix}replay-check"]
    proc = await asyncio.to_thread(_cli, *_topic_replay(recording, *args), cwd=recording.workdir)
    assert 0 == proc.returncode

    assert before == await _live_state(recording)


@pytest.mark.slow
async def test_to_topic_writes_the_replayed_decisions(recording: Recording) -> None:
    """--to-topic sends every replayed decision, keyed by fact; a rerun gives identical bytes."""
    target = f"{recording.prefix}replay-out"
    out = recording.workdir / "to-topic.jsonl"
    args = ["--from-beginning", "--out", str(out), "--to-topic", target]
    proc = await asyncio.to_thread(_cli, *_topic_replay(recording, *args), cwd=recording.workdir)
    assert (0, b"") == (proc.returncode, proc.stderr)
    assert await _full_replay(recording) == out.read_bytes()

    sent = await _consume(recording.bootstrap, target)
    assert True is all(key == _key(orjson.loads(value)).encode() for *_, key, value in sent)
    assert _per_fact(_lines(out.read_bytes())) == _per_fact(orjson.loads(v) for *_, v in sent)
    assert len(_lines(out.read_bytes())) == len(sent)


@pytest.mark.slow
async def test_from_time_replays_only_the_later_records(recording: Recording) -> None:
    """--from T (and --to T2) replay exactly the records stamped in that range."""
    since, until = (
        datetime.fromtimestamp(ms / 1000, UTC).isoformat()
        for ms in (recording.middle_ms, recording.late_end_ms)
    )
    later, window = recording.workdir / "later.jsonl", recording.workdir / "window.jsonl"
    runs = await asyncio.gather(
        asyncio.to_thread(
            _cli,
            *_topic_replay(recording, "--from", since, "--out", str(later)),
            cwd=recording.workdir,
        ),
        asyncio.to_thread(
            _cli,
            *_topic_replay(recording, "--from", since, "--to", until, "--out", str(window)),
            cwd=recording.workdir,
        ),
    )
    assert [(0, b""), (0, b"")] == [(p.returncode, p.stderr) for p in runs]

    records = await _consume(recording.bootstrap, recording.names.claims)
    policy = load_policy(recording.policy)
    for path, low, high in (
        (later, recording.middle_ms, None),
        (window, recording.middle_ms, recording.late_end_ms),
    ):
        replayer = Replayer(policy, PARTITIONS)
        for partition in range(PARTITIONS):
            mine = [r for r in records if r[0] == partition]
            start = next((r[1] for r in mine if r[2] >= low), None)
            stop = next((r[1] for r in mine if high is not None and r[2] >= high), None)
            for _, offset, stamp_ms, key, value in mine:
                if start is not None and offset >= start and (stop is None or offset < stop):
                    replayer.feed_record(
                        Record(replayer.topic, partition, offset, key, value, stamp_ms * 1000)
                    )
            replayer.finish_partition(partition)
        expected = replayer.finish().decisions
        actual = _lines(path.read_bytes())
        assert expected == actual
        used = {c["claim_id"] for record in actual for c in record["claims"]}
        delays = {recording.delays[claim_id] for claim_id in used}
        assert True is (bool(used) and min(delays) >= MIDDLE_S)
        if high is not None:
            assert True is (max(delays) < LATE_END_S)
    later_facts = {
        _key(c) for c in recording.published if recording.delays[c["claim_id"]] >= MIDDLE_S
    }
    assert later_facts == set(_per_fact(_lines(later.read_bytes())))


class _Interrupted(Exception):
    """Stands for the replay process dying."""


@pytest.mark.slow
async def test_checkpoint_resumes_byte_for_byte(
    recording: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay stopped after its first partition resumes from the checkpoint to the same bytes."""
    full = await _full_replay(recording)
    out, checkpoint = recording.workdir / "resumed.jsonl", recording.workdir / "ck.json"
    real = replay_topic.partition_done

    def die_after_first(*args: Any) -> None:
        real(*args)
        raise _Interrupted

    monkeypatch.setattr(replay_topic, "partition_done", die_after_first)
    request = ReplayRequest(
        policy=load_policy(recording.policy),
        topic=recording.names.claims,
        bootstrap=recording.bootstrap,
        out=out,
        checkpoint=checkpoint,
    )
    with out.open("wb") as sink, pytest.raises(_Interrupted):
        await replay_topic.replay_topic(request, Outputs(request, sink))
    monkeypatch.undo()
    saved = json.loads(checkpoint.read_text())
    assert [0] == saved["done"]
    written = out.read_bytes()
    first = b"".join(
        line for line in full.splitlines(keepends=True) if _home(orjson.loads(line)) == 0
    )
    assert (first, first) == (written, full[: saved["out_bytes"]])
    with out.open("ab") as sink:  # the dying process had begun the next partition's output
        sink.write(b'{"decision_id":"dec_trunc')

    args = ["--from-beginning", "--out", str(out), "--checkpoint", str(checkpoint)]
    proc = await asyncio.to_thread(_cli, *_topic_replay(recording, *args), cwd=recording.workdir)
    assert (0, b"", b"") == (proc.returncode, proc.stdout, proc.stderr)
    assert full == out.read_bytes()
    assert False is checkpoint.exists()


@pytest.mark.slow
async def test_file_export_gives_the_same_final_decisions(recording: Recording) -> None:
    """The topic's claims without ticks, replayed from a file, end where the live worker ended."""
    records = await _consume(recording.bootstrap, recording.names.claims)
    export = recording.workdir / "export.jsonl"
    export.write_bytes(
        b"".join(value + b"\n" for _, _, _, key, value in records if key != TICK_KEY)
    )
    out = recording.workdir / "from-file.jsonl"
    proc = await asyncio.to_thread(
        _cli,
        "replay",
        "--policy",
        str(recording.policy),
        "--input",
        str(export),
        "--out",
        str(out),
        cwd=recording.workdir,
    )
    assert (0, b"") == (proc.returncode, proc.stderr)

    # what makes this hold: a file has no ticks, so expiry happens only when later claims move
    # the clock; here every partition's claims run past its last balance expiry
    last_claim = {p: 0 for p in range(PARTITIONS)}
    last_expiry = {p: 0 for p in range(PARTITIONS)}
    for claim in recording.published:
        observed = parse_rfc3339(claim["observed_at"])
        last_claim[_home(claim)] = max(last_claim[_home(claim)], observed)
        if claim["field"] == "balance":
            moment = stale_at(observed, BALANCE_BUDGET_US)
            last_expiry[_home(claim)] = max(last_expiry[_home(claim)], moment)
    assert True is all(last_claim[p] > last_expiry[p] for p in range(PARTITIONS))

    def final(record: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(record[k] for k in ("outcome", "value", "canonical", "action", "decision_id"))

    live = {k: final(r) for k, r in _finals(recording.decisions).items()}
    from_file = {k: final(r) for k, r in _finals(_lines(out.read_bytes())).items()}
    assert live == from_file


async def test_transactional_claims_topic_replays_to_its_end(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A claims topic written in transactions (markers, an aborted batch) replays and ends."""
    topic = unique("cwreplay-txn")
    base = datetime.now(UTC) - timedelta(seconds=5)

    def claim(n: int, batch: str) -> dict[str, Any]:
        subject = f"invoice:T-{n % 5}"
        return {
            "claim_id": f"{batch}-{n}",
            "subject": subject,
            "field": "payment_status",
            "source": "billing-api" if n % 2 else "reporting-replica",
            "observed_at": rfc3339(base + timedelta(seconds=n / 10)),
            "status": "ok",
            "value": VALUES[n % 3],
        }

    committed = [claim(n, "ok") for n in range(10)] + [claim(n, "ok") for n in range(20, 30)]
    aborted = [claim(n, "aborted") for n in range(10, 20)]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=topic)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 2, 1)])
        await producer.start()
        for batch, commit in ((committed[:10], True), (aborted, False), (committed[10:], True)):
            await producer.begin_transaction()
            for c in batch:
                await producer.send(topic, orjson.dumps(c), key=_key(c).encode())
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
        await producer.stop()

        source = tmp_path / "committed.jsonl"
        source.write_text("".join(json.dumps(c) + "\n" for c in committed), encoding="utf-8")
        policy = REPO / "examples" / "policy.yaml"
        from_topic, from_file = await asyncio.gather(
            asyncio.to_thread(
                _cli,
                "replay",
                "--policy",
                str(policy),
                "--bootstrap",
                kafka_bootstrap,
                "--topic",
                topic,
                "--from-beginning",
                cwd=tmp_path,
            ),
            asyncio.to_thread(
                _cli,
                "replay",
                "--policy",
                str(policy),
                "--input",
                str(source),
                "--partitions",
                "2",
                cwd=tmp_path,
            ),
        )
        assert [(0, b""), (0, b"")] == [(p.returncode, p.stderr) for p in (from_topic, from_file)]

        # a file stands in a tick for each claim, this topic has none: compare where they end
        def ends(raw: bytes) -> dict[str, tuple[Any, ...]]:
            return {
                k: (r["decision_id"], r["outcome"], r["value"], r["action"])
                for k, r in _finals(_lines(raw)).items()
            }

        assert ends(from_file.stdout) == ends(from_topic.stdout)
        used = {c["claim_id"] for r in _lines(from_topic.stdout) for c in r["claims"]}
        assert {c["claim_id"] for c in committed} == used
    finally:
        with contextlib.suppress(Exception):
            await producer.stop()
        with contextlib.suppress(Exception):
            await admin.delete_topics([topic])
        await admin.close()


async def test_an_empty_claims_topic_replays_to_nothing_without_a_traceback(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A consumer stopped right after it started: aiokafka's CancelledError stays inside."""
    prefix = unique("cwreplay-empty") + "."
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(f"{prefix}claims", 2, 1)])
        done = await asyncio.to_thread(
            _cli,
            "replay",
            "--policy",
            str(REPO / "examples" / "policy.yaml"),
            "--from-beginning",
            "--bootstrap",
            kafka_bootstrap,
            "--topic-prefix",
            prefix,
            cwd=tmp_path,
        )
        assert (0, b"", b"") == (done.returncode, done.stdout, done.stderr)
    finally:
        with contextlib.suppress(Exception):
            await admin.delete_topics([f"{prefix}claims"])
        await admin.close()
