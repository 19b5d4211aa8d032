"""Integration harness: worker subprocesses, claim publishing and topic reading on a real broker.

Register it in a test module with ``pytest_plugins = ["tests.support.kafka"]`` to get
the `workers` fixture and the worker logs attached to failing tests' reports; the helpers
(`TopicReader`, `publish_claims`, `offline_resolve`, ...) are imported as usual. Its checks
raise AssertionError with their own messages, so it is not assertion-rewritten
(PYTEST_DONT_REWRITE: the test module imports it before registering it as a plugin).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from claimwatch.client.publisher import Publisher
from claimwatch.wire.topics import TopicNames

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CLAIMWATCH = BIN / "claimwatch"
READY_TIMEOUT = 90.0

#: The worker runs with its shipped settings (default store, session timeouts, static
#: membership); only its output is unbuffered, so that the logs attached to a failing test
#: are complete.
WORKER_ENV = {"PYTHONUNBUFFERED": "1"}
#: The admin token of the workers that tests stop agents of (`CLAIMWATCH_ADMIN_TOKEN`).
ADMIN_TOKEN = "claimwatch-tests-admin-token"
ADMIN_ENV = (("CLAIMWATCH_ADMIN_TOKEN", ADMIN_TOKEN),)
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

WORKERS_KEY = pytest.StashKey[list["WorkerProcess"]]()

#: The `fresh_topic` fixture: creates a uniquely named topic, returns its name.
TopicFactory = Callable[..., Awaitable[str]]


# ---------------------------------------------------------------------------- small helpers


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unique(name: str) -> str:
    """`name` plus a short random suffix."""
    return f"{name}-{uuid.uuid4().hex[:10]}"


def rfc3339(moment: datetime) -> str:
    """RFC 3339 UTC text with microseconds."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def ago(seconds: float = 1.0, *, base: datetime | None = None) -> str:
    """The wall-clock time `seconds` ago (or before `base`) as RFC 3339."""
    return rfc3339((base or datetime.now(UTC)) - timedelta(seconds=seconds))


def write_policy(directory: Path, text: str, name: str = "policy.yaml") -> Path:
    """Write a policy YAML file into `directory` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def fact_key(claim: Mapping[str, Any]) -> str:
    """`subject|field` of a claim or a decision."""
    return f"{claim['subject']}|{claim['field']}"


# ---------------------------------------------------------------------------- worker process


@dataclass(slots=True)
class WorkerProcess:
    """One `claimwatch worker` subprocess; start, kill and restart it with the same ids."""

    bootstrap: str
    policy: Path
    prefix: str
    app_id: str
    web_port: int
    data_dir: Path
    log_path: Path
    partitions: int = 4
    #: None: the worker's default store (rocksdb), as the README starts it
    store: str | None = None
    extra_args: tuple[str, ...] = ()
    #: environment on top of the test's own (e.g. CLAIMWATCH_LOG_LEVEL)
    extra_env: tuple[tuple[str, str], ...] = ()
    #: the argv that runs the CLI in place of the installed `claimwatch` (e.g. another tree's)
    launcher: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def names(self) -> TopicNames:
        return TopicNames(self.prefix)

    def command(self) -> list[str]:
        return [
            *(self.launcher or (str(CLAIMWATCH),)),
            "worker",
            "--policy",
            str(self.policy),
            "--bootstrap",
            self.bootstrap,
            "--topic-prefix",
            self.prefix,
            "--web-port",
            str(self.web_port),
            "--partitions",
            str(self.partitions),
            *(("--store", self.store) if self.store is not None else ()),
            "--data-dir",
            str(self.data_dir),
            "--app-id",
            self.app_id,
            *self.extra_args,
        ]

    def start(self) -> None:
        """Spawn the worker (its own process group); output goes to the log file."""
        if self.alive:
            raise RuntimeError(f"worker {self.app_id}@{self.web_port} is already running")
        self.starts += 1
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **WORKER_ENV, **dict(self.extra_env)}
        env.pop("CLAIMWATCH_TOPIC_PREFIX", None)
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def health(self) -> int | None:
        """The status of GET /health, or None when nothing answers."""
        try:
            status, _ = await self.get("/health", timeout=2.0)
        except (aiohttp.ClientError, TimeoutError, OSError):
            return None
        return status

    async def ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until GET /health answers 200 (recovery done, partitions assigned)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive:
                code = self.proc.returncode if self.proc else None
                raise AssertionError(f"worker exited with {code} before it was ready:\n{self.log}")
            if await self.health() == 200:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"worker not healthy after {timeout:.0f}s:\n{self.log}")

    async def launch(self) -> WorkerProcess:
        """Start and wait until healthy."""
        self.start()
        await self.ready()
        return self

    def kill(self, sig: signal.Signals = signal.SIGKILL, timeout: float = 30.0) -> int | None:
        """Send `sig` to the worker and wait for it to exit; SIGKILL when it lingers."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        with self.log_path.open("ab") as log:
            log.write(f"===== stopped by {sig.name}: exit {self.proc.returncode}\n".encode())
        return self.proc.returncode

    async def restart(self, sig: signal.Signals = signal.SIGKILL) -> WorkerProcess:
        """Kill (when running) and start again with the same app id, prefix and port."""
        self.kill(sig)
        return await self.launch()

    async def get(
        self, path: str, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0
    ) -> tuple[int, bytes]:
        """GET a page of the worker: (status, body)."""
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        async with (
            aiohttp.ClientSession(timeout=client_timeout) as session,
            session.get(self.url + path, headers=dict(headers or {})) as response,
        ):
            return response.status, await response.read()

    async def post(
        self,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, bytes]:
        """POST to a page of the worker: (status, body)."""
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        async with (
            aiohttp.ClientSession(timeout=client_timeout) as session,
            session.post(self.url + path, headers=dict(headers or {}), data=data) as response,
        ):
            return response.status, await response.read()

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


class Workers:
    """Factory of worker subprocesses for one test; every one is killed at teardown."""

    def __init__(self, bootstrap: str, tmp_path: Path, started: list[WorkerProcess]) -> None:
        self.bootstrap = bootstrap
        self.tmp_path = tmp_path
        self.started = started

    def new(
        self,
        policy: Path,
        *,
        prefix: str | None = None,
        app_id: str | None = None,
        partitions: int = 4,
        web_port: int | None = None,
        store: str | None = None,
        extra_args: tuple[str, ...] = (),
        data_dir: Path | None = None,
        extra_env: tuple[tuple[str, str], ...] = (),
        launcher: tuple[str, ...] = (),
    ) -> WorkerProcess:
        """A worker (not yet started) with a unique prefix/app id unless given."""
        index = len(self.started)
        prefix = prefix if prefix is not None else unique("cwtest") + "."
        worker = WorkerProcess(
            bootstrap=self.bootstrap,
            policy=policy,
            prefix=prefix,
            app_id=app_id or unique("cwapp"),
            web_port=web_port or free_port(),
            data_dir=data_dir or self.tmp_path / f"worker-{index}-data",
            log_path=self.tmp_path / f"worker-{index}.log",
            partitions=partitions,
            store=store,
            extra_args=extra_args,
            extra_env=extra_env,
            launcher=launcher,
        )
        self.started.append(worker)
        return worker

    async def launch(self, policy: Path, **options: Any) -> WorkerProcess:
        """A new worker, started and healthy."""
        return await self.new(policy, **options).launch()

    def stop_all(self) -> None:
        """Stop every worker, then delete the topics of their prefixes and app ids."""
        for worker in self.started:
            with contextlib.suppress(Exception):
                worker.kill(signal.SIGTERM, timeout=15.0)
        prefixes = {w.prefix for w in self.started} | {f"{w.app_id}-" for w in self.started}
        if prefixes:
            # a thread of its own: no event loop runs in fixture teardown, and pytest-asyncio's
            # loops are left alone
            with ThreadPoolExecutor(1) as pool, contextlib.suppress(Exception):
                pool.submit(asyncio.run, delete_topics(self.bootstrap, prefixes)).result(60)


@pytest.fixture
def workers(
    kafka_bootstrap: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Workers]:
    """Start claimwatch workers as subprocesses; their logs are shown when the test fails."""
    started: list[WorkerProcess] = []
    request.node.stash[WORKERS_KEY] = started
    factory = Workers(kafka_bootstrap, tmp_path, started)
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Attach the logs of the test's workers to the report of a failing test."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for index, worker in enumerate(item.stash.get(WORKERS_KEY, [])):
            text = worker.log
            if len(text) > 60_000:
                text = "[... log truncated ...]\n" + text[-60_000:]
            report.sections.append((f"worker {index} log ({worker.log_path})", text))


# ---------------------------------------------------------------------------- Kafka I/O


@dataclass(frozen=True, slots=True)
class Record:
    """One record read back from a topic."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: dict[str, bytes] = field(default_factory=dict)

    def json(self) -> Any:
        return orjson.loads(self.value)


async def publish_claims(bootstrap: str, prefix: str, claims: Iterable[Mapping[str, Any]]) -> int:
    """Send claims with the agent-side publisher (validated, keyed by fact)."""
    async with Publisher(bootstrap, prefix) as publisher:
        return await publisher.publish_many(claims)


async def publish_raw(
    bootstrap: str, topic: str, messages: Iterable[tuple[bytes | None, bytes]]
) -> list[tuple[int, int]]:
    """Send raw (key, value) messages in order; returns their (partition, offset)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, max_request_size=4 << 20
    )
    await producer.start()
    try:
        placed = []
        for key, value in messages:
            meta = await producer.send_and_wait(topic, value, key=key)
            placed.append((meta.partition, meta.offset))
        return placed
    finally:
        await producer.stop()


async def topic_partitions(bootstrap: str, topic: str, timeout: float = 30.0) -> list[int]:
    """The partition numbers of `topic`, waiting (up to `timeout` s) for it to exist."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            (described,) = await admin.describe_topics([topic])
            if described["error_code"] == 0 and described["partitions"]:
                return sorted(p["partition"] for p in described["partitions"])
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {topic} does not exist")
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


async def delete_topics(bootstrap: str, prefixes: Iterable[str]) -> list[str]:
    """Delete every topic whose name starts with one of `prefixes`; returns their names."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        doomed = sorted(t for t in await admin.list_topics() if t.startswith(tuple(prefixes)))
        if doomed:
            await admin.delete_topics(doomed)
        return doomed
    finally:
        await admin.close()


class TopicReader:
    """Reads a whole topic from the beginning (read_committed, no group) and keeps what it saw."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self._bootstrap = bootstrap
        self.records: list[Record] = []
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            max_partition_fetch_bytes=4 << 20,
        )
        self._partitions: list[TopicPartition] = []

    async def __aenter__(self) -> TopicReader:
        partitions = await topic_partitions(self._bootstrap, self.topic)
        self._partitions = [TopicPartition(self.topic, p) for p in partitions]
        await self._consumer.start()
        self._consumer.assign(self._partitions)
        await self._consumer.seek_to_beginning(*self._partitions)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()

    async def poll(self, timeout: float = 0.3) -> list[Record]:
        """Whatever arrives within `timeout` seconds (appended to `records`)."""
        batches = await self._consumer.getmany(timeout_ms=int(timeout * 1000), max_records=10_000)
        fresh = [
            Record(
                topic=r.topic,
                partition=r.partition,
                offset=r.offset,
                key=r.key,
                value=r.value,
                headers={k: bytes(v) for k, v in (r.headers or ())},
            )
            for tp in sorted(batches, key=lambda tp: tp.partition)
            for r in batches[tp]
        ]
        self.records.extend(fresh)
        return fresh

    async def _at_end(self) -> bool:
        ends = await self._consumer.end_offsets(self._partitions)
        for tp in self._partitions:
            if await self._consumer.position(tp) < ends[tp]:
                return False
        return True

    async def to_end(self, timeout: float = 30.0) -> list[Record]:
        """Read up to the end each partition has now (for a topic that never goes idle)."""
        ends = await self._consumer.end_offsets(self._partitions)
        deadline = time.monotonic() + timeout
        while [tp for tp in self._partitions if await self._consumer.position(tp) < ends[tp]]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.topic}: not read to its end within {timeout:.0f}s")
            await self.poll(0.2)
        return self.records

    async def drain(self, idle: float = 1.0, timeout: float = 60.0) -> list[Record]:
        """Read until the end of every partition and then `idle` seconds with nothing new."""
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if await self.poll(0.2):
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= idle and await self._at_end():
                return self.records
        raise AssertionError(f"{self.topic} did not go idle within {timeout:.0f}s")

    async def wait_for(
        self, done: Callable[[list[Record]], bool], timeout: float = 60.0, what: str = ""
    ) -> list[Record]:
        """Read until `done(records)` holds; fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not done(self.records):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.topic}: {what or 'condition'} not met within {timeout:.0f}s "
                    f"({len(self.records)} records read)"
                )
            await self.poll(0.3)
        return self.records


async def read_topic(
    bootstrap: str, topic: str, idle: float = 1.0, timeout: float = 60.0
) -> list[Record]:
    """Every committed record of `topic`, read from the beginning until it goes idle."""
    async with TopicReader(bootstrap, topic) as reader:
        return await reader.drain(idle, timeout)


def considered(decision: Mapping[str, Any]) -> set[str]:
    """The ids of the claims a decision lists."""
    return {c["claim_id"] for c in decision["claims"]}


async def decision_naming(
    bootstrap: str, topic: str, claim_id: str, timeout: float = 45.0
) -> dict[str, Any]:
    """The first record of `topic` (decisions) that lists `claim_id` among its claims."""

    def naming(records: list[Record]) -> list[dict[str, Any]]:
        return [d for d in (r.json() for r in records) if claim_id in considered(d)]

    async with TopicReader(bootstrap, topic) as reader:
        records = await reader.wait_for(
            lambda read: bool(naming(read)), timeout, f"a decision of {claim_id}"
        )
        return naming(records)[0]


def decisions_by_fact(records: Iterable[Record]) -> dict[str, list[dict[str, Any]]]:
    """Decision records grouped by fact key, in log order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        decision = record.json()
        grouped.setdefault(fact_key(decision), []).append(decision)
    return grouped


async def wait_for_ticks(bootstrap: str, prefix: str, timeout: float = 30.0) -> None:
    """Wait until every claims partition holds a tick (so every partition clock runs)."""
    async with TopicReader(bootstrap, TopicNames(prefix).claims) as reader:
        wanted = {tp.partition for tp in reader._partitions}

        def ticked(records: list[Record]) -> bool:
            return wanted <= {r.partition for r in records if r.key == b"__tick__"}

        await reader.wait_for(ticked, timeout, "a tick in every partition")


# ---------------------------------------------------------------------------- offline side


def summary(decision: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a decision the live and offline paths must agree on."""
    return {
        "decision_id": decision["decision_id"],
        "outcome": decision["outcome"],
        "value": decision["value"],
        "canonical": decision["canonical"],
        "dispositions": {c["claim_id"]: c["disposition"] for c in decision["claims"]},
    }


def offline_resolve(
    policy: Path, claims: Iterable[Mapping[str, Any]], now: str, workdir: Path
) -> dict[str, dict[str, Any]]:
    """`claimwatch resolve --policy P --now T FILE` over `claims`: decision per fact key."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"claims-{uuid.uuid4().hex[:8]}.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in claims), encoding="utf-8")
    proc = subprocess.run(
        [str(CLAIMWATCH), "resolve", "--policy", str(policy), "--now", now, str(path)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if proc.returncode != 0:
        raise AssertionError(f"claimwatch resolve failed ({proc.returncode}): {proc.stderr!r}")
    decisions = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {fact_key(d): d for d in decisions}
