"""Subprocesses of the benchmarks: the worker, the passthrough, the Faust floor; finding them."""

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimwatch.wire.kafka import env_bootstrap

PARTITIONS = 4
CLAIMWATCH = Path(sys.executable).with_name("claimwatch")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def vm_hwm_mib(pid: int) -> float | None:
    """Peak resident set size of a running process (VmHWM), MiB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def cpu_s(pid: int) -> float | None:
    """CPU time a running process has used so far (user + system, all threads), seconds."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command name
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


@dataclass(slots=True)
class Child:
    """A subprocess of this benchmark (its log in the work directory)."""

    name: str
    command: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    #: variables set in the child's environment on top of this process's
    env: dict[str, str] = field(default_factory=dict)

    def start(self) -> Child:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        env.pop("CLAIMWATCH_TOPIC_PREFIX", None)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        return self

    def check(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-4000:]
            raise RuntimeError(f"{self.name} exited early:\n{tail}")

    def cpu_s(self) -> float | None:
        return cpu_s(self.proc.pid) if self.proc is not None else None

    def peak_mib(self) -> float | None:
        return vm_hwm_mib(self.proc.pid) if self.proc is not None else None

    def stop(self) -> None:
        """SIGTERM this child (SIGKILL when it lingers) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def worker(
    policy: Path, prefix: str, app_id: str, port: int, work: Path, store: str | None = None
) -> Child:
    """The worker as the README starts it (default store unless `store` names another)."""
    command = [
        str(CLAIMWATCH), "worker", "--policy", str(policy), "--bootstrap", env_bootstrap(),
        "--topic-prefix", prefix, "--app-id", app_id, "--web-port", str(port),
        "--partitions", str(PARTITIONS), "--data-dir", str(work / app_id),
        *(("--store", store) if store else ()),
    ]  # fmt: skip
    return Child(f"worker {app_id}", command, work / f"{app_id}.log")


def passthrough_child(spec: dict[str, Any], work: Path) -> Child:
    command = [sys.executable, "-m", "bench.passthrough", json.dumps(spec)]
    return Child(f"passthrough {spec['group']}", command, work / f"{spec['group']}.log")


def faust_floor_child(spec: dict[str, Any], work: Path) -> Child:
    command = [sys.executable, "-m", "bench.faust_floor", json.dumps(spec)]
    return Child(f"faust-floor {spec['group']}", command, work / f"{spec['group']}.log")


async def wait_healthy(child: Child, port: int, timeout: float = 120.0) -> None:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            child.check()
            with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{child.name} not healthy after {timeout:.0f}s")


async def wait_file(child: Child, path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        child.check()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{child.name} not ready after {timeout:.0f}s")
        await asyncio.sleep(0.1)


def children_of(name: str) -> list[int]:
    """The pids of this process's children whose command line contains `name`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            ppid = int(text[text.rindex(")") + 2 :].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if ppid == os.getpid() and name in cmdline:
                found.append(int(stat.parent.name))
    return found


def pid_of(child: Child) -> int:
    if child.proc is None:
        raise RuntimeError(f"{child.name} was not started")
    return child.proc.pid


def only(pids: list[int]) -> int:
    if len(pids) != 1:
        raise RuntimeError(f"expected one gateway process, found {pids}")
    return pids[0]
