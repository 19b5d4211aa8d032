"""Builders for the gateway tests: the two test upstreams, a gateway file, an agent session."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.types import CallToolResult

from tests.support.cli import CLAIMWATCH
from tests.support.paths import REPO

PYTHON = sys.executable
#: The agent's transports to the gateway, for parametrize.
TRANSPORTS = ("stdio", "http")


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Return once something accepts on `port`; fail when `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the process on port {port} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


@contextlib.contextmanager
def running(
    args: Sequence[str], port: int, env: Mapping[str, str] | None = None, quiet: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """A process started from the repository that listens on `port`, stopped at the end.

    `env` adds to this process's environment; `quiet` drops its output.
    """
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(
        list(args),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=out,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_listening(port, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def upstream_command(name: str) -> list[str]:
    """The command line of a test upstream over stdio."""
    return [PYTHON, "-m", "tests.support.mcp_upstream", name]


def ledger_command(status: str) -> list[str]:
    """The command line of a test ledger saying `status` of every invoice (stdio)."""
    return [*upstream_command("ledger"), "--status", status]


def stdio_server(command: list[str], timeout: str = "20s") -> dict[str, Any]:
    """A `servers:` entry of a stdio upstream run from the repository."""
    return {"command": command, "cwd": str(REPO), "timeout": timeout}


def write_gateway(
    path: Path,
    servers: Mapping[str, Any],
    tools: Mapping[str, Any] | None = None,
    **settings: Any,
) -> Path:
    """A gateway file of `servers`, `tools` mappings and top-level settings (`worker_url`...)."""
    document = {**settings, "servers": dict(servers), **({"tools": dict(tools)} if tools else {})}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def write_config(
    path: Path, beta_url: str, *, alpha_timeout: str = "20s", extra: dict[str, Any] | None = None
) -> Path:
    """A gateway file: `alpha` over stdio, `beta` at `beta_url`, plus `extra` servers."""
    servers: dict[str, Any] = {
        "alpha": stdio_server(upstream_command("alpha"), alpha_timeout),
        "beta": {"url": beta_url, "timeout": "20s"},
        **(extra or {}),
    }
    return write_gateway(path, servers)


def gateway_command(config: Path, *extra: str) -> list[str]:
    """`claimwatch gateway --config FILE ...`: the installed console script."""
    return [str(CLAIMWATCH), "gateway", "--config", str(config), *extra]


@contextlib.asynccontextmanager
async def agent(
    transport: str, config: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[Client]:
    """The SDK's client, connected to a gateway of `config` over stdio or streamable HTTP.

    Over stdio the gateway gets the SDK's safe environment, over HTTP the test's; `env`
    is added to either (e.g. a signing key).
    """
    if transport == "stdio":
        command = gateway_command(config)
        params = StdioServerParameters(
            command=command[0],
            args=command[1:],
            cwd=str(REPO),
            env={**get_default_environment(), **env} if env else None,
        )
        async with Client(params, cache=None) as client:
            yield client
        return
    port = free_port()
    with running(gateway_command(config, "--http", f"127.0.0.1:{port}"), port, env):
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
            yield client


def wire(result: CallToolResult) -> dict[str, Any]:
    """A result as the JSON it travels as."""
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def text_of(result: CallToolResult) -> str:
    """The text blocks of a result, joined."""
    return "\n".join(getattr(block, "text", "") for block in result.content)
