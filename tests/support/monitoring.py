"""Real Prometheus and Alertmanager servers for a test, on the project's own rules and routes.

The shipped `compose/prometheus/rules.yml` and `compose/alertmanager/alertmanager.yml` are
copied with only what a test must change: the scrape target, the Alertmanager address and
the receivers' URLs templated to the test's ports, and the waits shortened (scrape and
evaluation every second, every rule's `for:` cut to `FOR`, the route's `group_wait` and
`group_interval` to one second) so that a page arrives in seconds. The servers are
Debian's `prometheus` and `prometheus-alertmanager` (`make tools`); without them a test
fails with that message, it never skips.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from tests.support.kafka import free_port

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "compose" / "prometheus" / "rules.yml"
PROMETHEUS_YML = REPO / "compose" / "prometheus" / "prometheus.yml"
ALERTMANAGER_YML = REPO / "compose" / "alertmanager" / "alertmanager.yml"
#: every rule's `for:` in the test's copy (the shipped values are 1 to 10 minutes)
FOR = "2s"


def binary(name: str) -> str:
    """The path of a Debian monitoring binary; an AssertionError naming `make tools` if absent."""
    found = shutil.which(name)
    assert found is not None, f"{name} is not installed: run `make tools`"
    return found


def rules_copy() -> str:
    """The shipped rules with every `for:` of a minute or more cut to `FOR`."""
    return re.sub(r"(?m)^(\s+for:\s*)[1-9]\d*m\s*$", rf"\g<1>{FOR}", RULES.read_text())


def prometheus_copy(rules: Path, worker: str, alertmanager: str) -> dict[str, Any]:
    """The shipped Prometheus config: targets templated, scrape and evaluation every second."""
    config: dict[str, Any] = yaml.safe_load(PROMETHEUS_YML.read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["rule_files"] = [str(rules)]
    config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = [alertmanager]
    config["scrape_configs"][0]["static_configs"][0]["targets"] = [worker]
    return config


def alertmanager_copy(webhook: str) -> dict[str, Any]:
    """The shipped routes and inhibitions: receivers' URLs templated, group waits 1 s."""
    config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_YML.read_text())
    config["route"].update(group_wait="1s", group_interval="1s")
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"{webhook}/{receiver['name']}"
    return config


@dataclass
class Page:
    """One alert as a webhook delivered it: receiver, status, labels, arrival (monotonic)."""

    receiver: str
    status: str
    labels: dict[str, str]
    at: float
    #: the alert as Alertmanager posted it
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class Webhook:
    """The pager: records every alert Alertmanager posts to it."""

    url: str
    pages: list[Page] = field(default_factory=list)

    def matching(self, status: str = "firing", **labels: str) -> list[Page]:
        """The pages of that status whose labels include `labels`."""
        return [
            p
            for p in self.pages
            if p.status == status and all(p.labels.get(k) == v for k, v in labels.items())
        ]

    async def wait_for(self, timeout: float, **labels: str) -> Page:
        """The first firing page with `labels`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.matching(**labels)
            if found:
                return found[0]
            await asyncio.sleep(0.1)
        seen = [(p.status, p.labels.get("alertname"), p.labels) for p in self.pages]
        raise AssertionError(f"no page {labels} within {timeout:.0f}s; pages so far: {seen}")


@contextlib.asynccontextmanager
async def webhook() -> AsyncIterator[Webhook]:
    """A webhook receiver on a free port, on the test's loop."""
    port = free_port()
    hook = Webhook(f"http://127.0.0.1:{port}")

    async def receive(request: web.Request) -> web.Response:
        body = await request.json()
        now = time.monotonic()
        for alert in body.get("alerts", []):
            receiver = request.match_info["receiver"]
            hook.pages.append(Page(receiver, alert["status"], alert["labels"], now, alert))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/{receiver}", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield hook
    finally:
        await runner.cleanup()


@dataclass
class Server:
    """A monitoring server subprocess and its HTTP address."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    async def get(self, path: str) -> Any:
        """GET a JSON API path."""
        async with aiohttp.ClientSession() as session, session.get(self.url + path) as response:
            return await response.json()

    async def ready(self, timeout: float = 30.0) -> None:
        """Wait until `/-/ready` answers 200; an AssertionError with the log if it never does."""
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, f"{self.name} exited:\n{self.log.read_text()}"
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with session.get(self.url + "/-/ready") as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.2)
        raise AssertionError(f"{self.name} not ready after {timeout:.0f}s:\n{self.log.read_text()}")


@contextlib.contextmanager
def _running(name: str, command: list[str], url: str, log: Path) -> Iterator[Server]:
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield Server(name, url, proc, log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def alertmanager(work: Path, hook: Webhook) -> Iterator[Server]:
    """Alertmanager on the project's routes (receivers templated to `hook`)."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "alertmanager.yml"
    config.write_text(yaml.safe_dump(alertmanager_copy(hook.url)))
    port = free_port()
    command = [
        binary("prometheus-alertmanager"),
        f"--config.file={config}",
        f"--storage.path={work / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # one instance: no gossip port
    ]
    with _running("alertmanager", command, f"http://127.0.0.1:{port}", work / "am.log") as server:
        yield server


@contextlib.contextmanager
def prometheus(work: Path, worker: str, alertmanager_url: str) -> Iterator[Server]:
    """Prometheus on the project's rules, scraping `worker` (host:port)."""
    work.mkdir(parents=True, exist_ok=True)
    rules = work / "rules.yml"
    rules.write_text(rules_copy())
    config = work / "prometheus.yml"
    target = alertmanager_url.removeprefix("http://")
    config.write_text(yaml.safe_dump(prometheus_copy(rules, worker, target)))
    port = free_port()
    command = [
        binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={work / 'prom-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with _running("prometheus", command, f"http://127.0.0.1:{port}", work / "prom.log") as server:
        yield server
