"""The live demo of `make run`: a worker, the demo's story played live, and a dashboard.

The story (`claimwatch.sim.story`) is published as `claimwatch simulate --scenario demo
--live` publishes it; the dashboard (`claimwatch.sim.board`) shows the facts, the conflicts
entering and leaving, the alerts and each source's lag status as the worker decides. On a
terminal it is a live view (rich `Live`); with `--plain` or off a terminal it is a log of
what changed, one line each (a decision that leaves a fact's outcome, value and action as
they were makes none).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError
from rich.console import Console
from rich.live import Live
from rich.text import Text

from claimwatch.client.decisions import DecisionTail, TopicMissing
from claimwatch.client.facts import env_worker_url
from claimwatch.client.publisher import Publisher
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.policy.source import PolicyError
from claimwatch.sim import live
from claimwatch.sim.board import Board
from claimwatch.sim.story import DURATION_S, aligned_start, story
from claimwatch.wire import kafka
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import TopicNames

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
#: The worker's web port when `CLAIMWATCH_WORKER_URL` names none.
DEFAULT_WEB_PORT = 6066


class DemoError(RuntimeError):
    """The demo cannot go on (the worker did not start, or died)."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m claimwatch.sim.demo", description=__doc__)
    parser.add_argument("--policy", type=Path, default=Path("examples/demo-policy.yaml"))
    parser.add_argument("--bootstrap", default=None, help="Kafka bootstrap host:port")
    parser.add_argument(
        "--topic-prefix",
        default=env_prefix(),
        help="prefix of the demo's topics (default: CLAIMWATCH_TOPIC_PREFIX, else claimwatch.)",
    )
    parser.add_argument(
        "--web-port",
        type=int,
        default=_worker_port(),
        help="the worker's HTTP port (default: the port of CLAIMWATCH_WORKER_URL, else 6066)",
    )
    parser.add_argument("--data-dir", type=Path, default=Path(".cache/demo"))
    parser.add_argument(
        "--plain", action="store_true", help="a log of what changed instead of the live view"
    )
    parser.add_argument(
        "--duration", type=float, default=None, help="stop after the agents ran this many seconds"
    )
    return parser.parse_args(argv)


def _worker_port() -> int:
    """The port of `CLAIMWATCH_WORKER_URL`, else 6066.

    So the demo's worker is the one `Client()` and `claimwatch ask` reach in the same
    environment (docs/quickstart.md).
    """
    return urlsplit(env_worker_url()).port or DEFAULT_WEB_PORT


def _port_taken(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _worker_command(args: argparse.Namespace, bootstrap: str, app_id: str) -> list[str]:
    script = Path(sys.executable).with_name("claimwatch")
    fallback = [sys.executable, "-c", "from claimwatch.cli.main import main; main()"]
    head = [str(script)] if script.exists() else fallback
    return [
        *head,
        "worker",
        "--policy",
        str(args.policy),
        "--bootstrap",
        bootstrap,
        "--topic-prefix",
        args.topic_prefix,
        "--web-port",
        str(args.web_port),
        "--app-id",
        app_id,
        "--data-dir",
        str(args.data_dir),
    ]


async def _topics(bootstrap: str) -> dict[str, list[int]]:
    admin = kafka.admin(bootstrap)
    await admin.start()
    try:
        return {
            t["topic"]: [p["partition"] for p in t["partitions"]]
            for t in await admin.describe_topics()
        }
    finally:
        await admin.close()


async def _skip_old_claims(bootstrap: str, topic: str, app_id: str) -> None:
    """Commit the new worker group at the end of the claims topic: past demos are not replayed."""
    partitions = (await _topics(bootstrap)).get(topic)
    if not partitions:
        return
    consumer = kafka.consumer(bootstrap, group_id=app_id)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        await consumer.commit(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def _wait_ready(proc: asyncio.subprocess.Process, port: int, stop: asyncio.Event) -> None:
    url = f"http://127.0.0.1:{port}/health"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT_S
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while not stop.is_set():
            if proc.returncode is not None:
                raise DemoError(f"the worker exited with status {proc.returncode}")
            if loop.time() > deadline:
                raise DemoError(f"the worker was not healthy within {READY_TIMEOUT_S:.0f}s")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


async def _stop_worker(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


class Demo:
    """The worker subprocess, the story and the dashboard, started and stopped together."""

    def __init__(self, args: argparse.Namespace, policy: CompiledPolicy) -> None:
        self.args = args
        self.policy = policy
        self.policy_version = policy.version
        self.bootstrap = args.bootstrap or env_bootstrap()
        self.names = TopicNames(args.topic_prefix)
        self.run_id = secrets.token_hex(3)
        self.app_id = f"claimwatch-demo-{self.run_id}"
        self.console = Console(highlight=False)
        self.plain = bool(args.plain) or not self.console.is_terminal
        self.stop = asyncio.Event()
        #: the suffix of this run's claim ids (set when the story starts)
        self.suffix = "-"
        self.board = Board(self.mine)
        self.view: Live | None = None

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(message, style=style), soft_wrap=True)

    def mine(self, record: Mapping[str, Any]) -> bool:
        """Whether a decision is of this run's story (another demo may share the topics)."""
        claims = record.get("claims") or []
        return any(str(c.get("claim_id", "")).endswith(self.suffix) for c in claims)

    def show(self, lines: list[Text]) -> None:
        """Print what changed (plain), or redraw the dashboard."""
        if self.view is not None:
            self.view.update(self.board.render())
            return
        for line in lines:
            self.console.print(line, soft_wrap=True)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop.set)
        self.args.data_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.args.data_dir / "worker.log"
        try:
            await _skip_old_claims(self.bootstrap, self.names.claims, self.app_id)
        except KafkaError as exc:
            self.say(f"demo: cannot reach Kafka at {self.bootstrap}: {exc!r}", "bold red")
            return 1
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                *_worker_command(self.args, self.bootstrap, self.app_id),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the demo, which stops the worker last
            )
        self.say(f"worker pid {proc.pid} ({self.app_id}); its logs go to {log_path}")
        try:
            await _wait_ready(proc, self.args.web_port, self.stop)
            if self.stop.is_set():
                return 0
            return await self._live(proc)
        except (DemoError, TopicMissing, KafkaError) as exc:
            self.say(f"demo: {exc or type(exc).__name__}; see {log_path}", "bold red")
            if proc.returncode is not None:
                self.say(_last_line(log_path), "red")
            return 1
        finally:
            self.say("stopping the worker…")
            await _stop_worker(proc)
            await self._clean_up()
            self.say("worker stopped")

    async def _live(self, proc: asyncio.subprocess.Process) -> int:
        port = self.args.web_port
        self.say(
            f"worker ready on http://127.0.0.1:{port} (/health /metrics /facts/SUBJECT/FIELD); "
            f"topics {self.names.prefix}*; policy {self.policy_version}",
        )
        claims, truth = story()
        window_us = self.policy.policy.alerts.conflict_spike.window
        settle_us = self.policy.rule("balance").settle_us
        start_us = aligned_start(time.time_ns() // 1000 + 1_000_000, window_us, settle_us)
        self.suffix = live.run_suffix(start_us)
        events = live.schedule(claims, truth, start_us, speed=1.0)
        self.say(
            f"the story: {len(claims)} claims over {DURATION_S} s from billing-api (system of "
            "record, two regions), ledger-replica (cache), reporting-replica (lags), user "
            f"(assertions), from {format_rfc3339(start_us)[11:19]} (its conflict spike laid "
            f"within one of the detector's {window_us // 1_000_000} s windows); Ctrl-C stops it",
        )
        async with (
            DecisionTail(self.bootstrap, self.names.decisions) as decisions,
            DecisionTail(self.bootstrap, self.names.alerts, id_key="alert_id") as alerts,
            Publisher(self.bootstrap, self.names.prefix) as publisher,
        ):

            async def send(batch: Sequence[dict[str, Any]]) -> None:
                for claim in batch:
                    await publisher.publish(claim)
                await publisher.flush()

            def truth_told(line: str) -> None:
                self.show(self.board.truth(line))

            tasks = {
                asyncio.create_task(live.run_live(events, send, truth_told), name="story"),
                asyncio.create_task(self._follow(decisions, self.board.decision), name="tail"),
                asyncio.create_task(self._follow(alerts, self.board.alert), name="alerts"),
                asyncio.create_task(proc.wait(), name="worker"),
                asyncio.create_task(self.stop.wait(), name="stop"),
            }
            if self.args.duration is not None:
                tasks.add(asyncio.create_task(asyncio.sleep(self.args.duration), name="duration"))
            with contextlib.ExitStack() as stack:
                if not self.plain:
                    self.view = stack.enter_context(
                        Live(self.board.render(), console=self.console, refresh_per_second=4)
                    )
                try:
                    await self._until_done(tasks, proc)
                finally:
                    self.view = None
            self.say(f"{self.board.decisions} decision(s) of the story seen")
        return 0

    async def _until_done(self, tasks: set[asyncio.Task[Any]], proc: Any) -> None:
        """Wait for a stop, the duration or a failure; the story's end is none of them."""
        try:
            while True:
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    name = task.get_name()
                    if name == "worker":
                        raise DemoError(f"the worker exited with status {proc.returncode}")
                    if task.exception() is not None:
                        raise DemoError(f"{name} failed: {task.exception()!r}")
                    if name == "story":
                        self.show(self.board.truth("the story is told; Ctrl-C stops the demo"))
                    else:
                        return
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _follow(
        self, tail: DecisionTail, take: Callable[[Mapping[str, Any]], list[Text]]
    ) -> None:
        async for batch in tail.batches(follow=True, idle_timeout_s=0):
            lines = [line for record in batch for line in take(record)]
            if lines or self.view is not None:
                self.show(lines)

    async def _clean_up(self) -> None:
        """Delete the topics named after this run's app id (changelog, leader): best effort."""
        with contextlib.suppress(Exception):
            mine = [t for t in await _topics(self.bootstrap) if self.app_id in t]
            if mine:
                admin = kafka.admin(self.bootstrap)
                await admin.start()
                try:
                    await admin.delete_topics(mine)
                finally:
                    await admin.close()


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when stopped (Ctrl-C or --duration), 1 on failure, 2 on a bad policy."""
    args = _arguments(argv)
    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    if _port_taken(args.web_port):
        taken = f"demo: port {args.web_port} is in use (another worker?); pass --web-port"
        print(taken, file=sys.stderr)
        return 2
    return asyncio.run(Demo(args, policy).run())


if __name__ == "__main__":
    sys.exit(main())
