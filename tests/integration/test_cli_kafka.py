"""`claimwatch publish`, `claimwatch decisions` and the live demo against a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.wire.topics import TopicNames, ensure_topics

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "policy.yaml"
CLAIMS = ROOT / "examples" / "claims.jsonl"
CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT, check=False
    )


async def _claimwatch(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(_run, str(CLAIMWATCH), *args)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def prefix(kafka_bootstrap: str) -> AsyncIterator[str]:
    """A fresh topic prefix; its topics are deleted afterwards."""
    name = f"cwcli-{uuid.uuid4().hex[:10]}."
    yield name
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(name)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


async def _read_all(bootstrap: str, topic: str, count: int) -> list[Any]:
    """Exactly `count` records of every partition of `topic` (or fail after 30 s)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p["partition"]) for p in described["partitions"]])
        await consumer.seek_to_beginning()
        records: list[Any] = []
        async with asyncio.timeout(30):
            while len(records) < count:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    records.extend(batch)
        return records
    finally:
        await consumer.stop()


async def test_publish_sends_valid_claims_keyed_by_fact_and_reports_the_invalid_line(
    kafka_bootstrap: str, prefix: str, tmp_path: Path
) -> None:
    """Valid example claims land keyed `subject|field`; the invalid line 4 is named, exit 1."""
    lines = CLAIMS.read_text().splitlines()
    bad = json.dumps({**json.loads(lines[0]), "claim_id": "bad-1", "status": "maybe"})
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join([*lines[:3], bad, *lines[3:]]) + "\n")

    result = await _claimwatch(
        "publish", "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix, "--create-topics",
        str(path),
    )  # fmt: skip

    assert 1 == result.returncode, result.stderr
    assert f"{path}:4: status:" in result.stderr
    assert 1 == result.stderr.count(str(path))
    assert f"sent {len(lines)} claim(s) to {prefix}claims" in result.stdout
    records = await _read_all(kafka_bootstrap, TopicNames(prefix).claims, len(lines))
    claims = [json.loads(line) for line in lines]
    expected = sorted((f"{c['subject']}|{c['field']}", c["claim_id"]) for c in claims)
    actual = sorted((r.key.decode(), json.loads(r.value)["claim_id"]) for r in records)
    assert expected == actual


def _decision(ident: str, fact: str, outcome: str, decided_at: str) -> dict[str, Any]:
    subject, field = fact.split("|")
    return {
        "decision_id": ident,
        "subject": subject,
        "field": field,
        "policy_version": "test",
        "outcome": outcome,
        "value": "paid" if outcome == "resolved" else None,
        "action": "proceed" if outcome == "resolved" else "escalate",
        "reason": f"{outcome} for the test",
        "decided_at": decided_at,
        "claims": [],
    }


DECISIONS = [
    _decision("d1", "invoice:INV-1|payment_status", "resolved", "2026-09-14T09:00:00Z"),
    _decision("d2", "invoice:INV-1|balance", "conflict", "2026-09-14T09:01:00Z"),
    _decision("d3", "invoice:INV-2|payment_status", "insufficient", "2026-09-14T09:02:00Z"),
    _decision("d4", "invoice:INV-2|payment_status", "resolved", "2026-09-14T09:03:00.500Z"),
]


async def _produce_decisions(bootstrap: str, prefix: str) -> None:
    """The DECISIONS, d1 and d3 once more (redelivered), and one aborted record."""
    names = TopicNames(prefix)
    await ensure_topics(bootstrap, names, 4)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{prefix}tx")
    await producer.start()
    try:
        for record in [*DECISIONS, DECISIONS[0], DECISIONS[2]]:
            key = f"{record['subject']}|{record['field']}".encode()
            async with producer.transaction():
                await producer.send(names.decisions, json.dumps(record).encode(), key=key)
        aborted = _decision("aborted", "invoice:INV-3|balance", "resolved", "2026-09-14T09:00:00Z")
        await producer.begin_transaction()
        await producer.send_and_wait(names.decisions, json.dumps(aborted).encode(), key=b"x")
        await producer.abort_transaction()
    finally:
        await producer.stop()


FILTERS = {
    "none": ([], ["d1", "d2", "d3", "d4"]),
    "field": (["--field", "balance"], ["d2"]),
    "outcome": (["--outcome", "resolved"], ["d1", "d4"]),
    "fact": (["--fact", "invoice:INV-2|payment_status"], ["d3", "d4"]),
    "since": (["--since", "2026-09-14T09:01:00.001Z"], ["d3", "d4"]),
    "until": (["--until", "2026-09-14T11:01:00+02:00"], ["d1", "d2"]),
    "both": (["--since", "2026-09-14T09:01:00Z", "--until", "2026-09-14T09:02:00Z"], ["d2", "d3"]),
}


@pytest.mark.parametrize("case", list(FILTERS))
async def test_decisions_prints_each_id_once_and_filters(
    kafka_bootstrap: str, prefix: str, case: str
) -> None:
    """`decisions --json --from-beginning` drops repeated ids, aborted records and filters."""
    await _produce_decisions(kafka_bootstrap, prefix)
    flags, expected = FILTERS[case]
    common = ["--bootstrap", kafka_bootstrap, "--topic-prefix", prefix]
    result = await _claimwatch(
        "decisions", *common, "--json", "--from-beginning", "--idle-timeout", "2", *flags
    )

    assert 0 == result.returncode, result.stderr
    ids = [json.loads(line)["decision_id"] for line in result.stdout.splitlines()]
    assert expected == sorted(ids)


async def test_decisions_prints_tab_separated_lines_off_a_terminal(
    kafka_bootstrap: str, prefix: str
) -> None:
    """Without --json and off a terminal: decided_at, fact, outcome, value, action, reason."""
    await _produce_decisions(kafka_bootstrap, prefix)
    common = ["--bootstrap", kafka_bootstrap, "--topic-prefix", prefix]
    result = await _claimwatch(
        "decisions", *common, "--from-beginning", "--idle-timeout", "2", "--field", "balance"
    )

    assert 0 == result.returncode, result.stderr
    cells = ["2026-09-14T09:01:00Z", "invoice:INV-1|balance", "conflict", "-", "escalate"]
    expected = "\t".join([*cells, "conflict for the test"]) + "\n"
    assert expected == result.stdout


async def test_decisions_refuses_a_missing_topic_and_bad_filters(kafka_bootstrap: str) -> None:
    """A prefix without topics is a runtime failure (1); an unknown outcome is bad usage (2)."""
    missing = await _claimwatch(
        "decisions", "--bootstrap", kafka_bootstrap, "--topic-prefix", f"none-{uuid.uuid4().hex}."
    )
    bad = await _claimwatch("decisions", "--bootstrap", kafka_bootstrap, "--outcome", "maybe")

    assert (1, 2) == (missing.returncode, bad.returncode)
    assert "does not exist" in missing.stderr


DECISION_LINE = re.compile(
    r"^(\d\d:\d\d:\d\d) (invoice:INV-\d+ \w+) +(\w+) +(.+?) +(proceed|degrade|escalate)"
)
STAMP = re.compile(r"^(\d\d):(\d\d):(\d\d) ")


def _seconds(line: str) -> int:
    found = STAMP.match(line)
    assert found is not None, line
    hours, minutes, seconds = (int(g) for g in found.groups())
    return hours * 3600 + minutes * 60 + seconds


async def test_make_runs_demo_tells_the_whole_story_within_two_minutes(
    kafka_bootstrap: str, prefix: str, tmp_path: Path
) -> None:
    """The plain demo tells every part within 2 min; no line repeats; its worker is gone."""
    args = [sys.executable, "-m", "claimwatch.sim.demo", "--plain", "--duration", "125"]
    args += ["--bootstrap", kafka_bootstrap, "--topic-prefix", prefix]
    args += ["--web-port", str(_free_port()), "--data-dir", str(tmp_path)]

    result = await asyncio.to_thread(_run, *args, timeout=400)

    assert 0 == result.returncode, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    decided = [m for m in map(DECISION_LINE.match, lines) if m]
    assert decided, result.stdout
    first = _seconds(decided[0].group(0))

    def when(*parts: str) -> int:
        found = [line for line in lines if all(p in line for p in parts)]
        assert found, f"no line with {parts} in:\n{result.stdout}"
        return (_seconds(found[0]) - first) % 86_400

    parts = [
        ("INV-1 payment_status", "resolved", "paid", "reporting-replica outranked, dissenting"),
        ("INV-2 balance", "conflict", "escalate", "billing-api@us-east-1"),
        ("conflict enters invoice:INV-2 balance",),
        ("INV-3 shipping_address", "resolved", "asserted, not verified"),
        ("ALERT replica_lag reporting-replica on payment_status: stalled",),
        ("ALERT conflict_spike on balance firing",),
        ("ALERT conflict_spike on balance resolved",),
        ("conflict leaves invoice:INV-10 balance",),
    ]
    assert {p: True for p in parts} == {p: when(*p) <= 120 for p in parts}
    shown: dict[str, list[tuple[str, str, str]]] = {}
    for match in decided:
        shown.setdefault(match.group(2), []).append(match.group(3, 4, 5))
    repeats = {k: v for k, v in shown.items() if any(a == b for a, b in itertools.pairwise(v))}
    assert {} == repeats
    worker = re.search(r"worker pid (\d+)", result.stdout)
    assert worker is not None, result.stdout
    with pytest.raises(ProcessLookupError):
        os.kill(int(worker.group(1)), 0)


async def test_the_demo_on_a_terminal_is_a_live_dashboard_and_ctrl_c_stops_it_all(
    kafka_bootstrap: str, prefix: str, tmp_path: Path
) -> None:
    """In a pseudo-terminal the demo draws its dashboard; SIGINT stops it and its worker."""
    args = [sys.executable, "-m", "claimwatch.sim.demo", "--bootstrap", kafka_bootstrap]
    args += ["--topic-prefix", prefix, "--web-port", str(_free_port()), "--data-dir", str(tmp_path)]
    output = await asyncio.to_thread(_in_a_terminal, args, "invoice:INV-2 balance", 120.0)

    assert 0 == output.returncode, output.text[-3000:]
    for part in ("facts (", "conflicts entering and leaving", "firing now:", "sources (replica"):
        assert part in output.text, part
    assert "invoice:INV-2 balance" in output.text and "worker stopped" in output.text
    worker = re.search(r"worker pid (\d+)", output.text)
    assert worker is not None, output.text[-3000:]
    with pytest.raises(ProcessLookupError):
        os.kill(int(worker.group(1)), 0)


@dataclass
class _Terminal:
    returncode: int | None
    text: str


def _in_a_terminal(args: list[str], until: str, timeout: float) -> _Terminal:
    """Run `args` on a pseudo-terminal until `until` is drawn, then Ctrl-C (SIGINT) it."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        args, stdin=follower, stdout=follower, stderr=follower, close_fds=True,
        env={**os.environ, "COLUMNS": "160", "LINES": "60", "TERM": "xterm-256color"},
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    interrupted = False
    while proc.poll() is None and time.monotonic() < deadline + 30:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunks.append(os.read(leader, 65536))
            except OSError:
                break
        text = ANSI.sub("", b"".join(chunks).decode(errors="replace"))
        if not interrupted and (until in text or time.monotonic() > deadline):
            proc.send_signal(signal.SIGINT)
            interrupted = True
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with contextlib.suppress(OSError):
        while select.select([leader], [], [], 0.2)[0]:
            chunk = os.read(leader, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(leader)
    return _Terminal(proc.returncode, ANSI.sub("", b"".join(chunks).decode(errors="replace")))


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


async def test_simulate_live_publishes_the_scenario_in_real_time_with_its_truth(
    kafka_bootstrap: str, prefix: str
) -> None:
    """A minute of conflict-spike at speed 20: every claim on the topic, times moved to now."""
    await ensure_topics(kafka_bootstrap, TopicNames(prefix), 4)
    offline = await _claimwatch("simulate", "--scenario", "conflict-spike", "--duration", "1m")
    expected = [json.loads(line) for line in offline.stdout.splitlines()]
    started = time.time()
    done = await _claimwatch(
        "simulate", "--scenario", "conflict-spike", "--duration", "1m", "--live",
        "--speed", "20", "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix,
    )  # fmt: skip
    took = time.time() - started
    assert 0 == done.returncode, done.stderr
    records = await _read_all(kafka_bootstrap, TopicNames(prefix).claims, len(expected))
    published = [json.loads(r.value) for r in records]
    assert sorted(c["claim_id"] for c in expected) == sorted(
        c["claim_id"].rsplit("-r", 1)[0] for c in published
    )
    times = [parse_rfc3339(c["observed_at"]) / 1e6 for c in published]
    assert started - 1 <= min(times) and max(times) <= started + took + 1
    assert 2.0 <= took < 30.0  # 60 s of scenario at speed 20, plus start-up
    assert done.stdout.startswith("truth ") and " conflict_spike payment_status starts " in (
        done.stdout
    )
    assert f"simulate: {len(expected):,} claims published" in done.stderr
