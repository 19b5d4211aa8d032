"""`claimwatch gateway --config gateway.yaml`: the MCP gateway between an agent and its servers.

The agent lists this command as its one MCP server (stdio by default, streamable HTTP with
`--http HOST:PORT`); the file lists the real servers. Exit 2 for a bad file or flag.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer

from claimwatch.cli.common import BootstrapOption, PrefixOption, fail
from claimwatch.client.mcp_adapter import MappingError
from claimwatch.gateway.config import HTTP_PATH, load_config
from claimwatch.policy.source import PolicyError


def host_port(raw: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6); ValueError saying what to write."""
    host, sep, port = raw.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{raw!r}: write HOST:PORT, e.g. 127.0.0.1:8766")
    return host, int(port)


def _version() -> str:
    try:
        return version("claimwatch")
    except PackageNotFoundError:  # a source tree run without installing
        return ""


def gateway(
    config: Annotated[
        Path, typer.Option("--config", "-c", help="the gateway file (servers, tool mappings)")
    ],
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help=f"serve streamable HTTP at http://HOST:PORT{HTTP_PATH} instead of stdio",
        ),
    ] = None,
    worker_url: Annotated[
        str | None,
        typer.Option(
            help=(
                "a worker's HTTP address, over the file's `worker_url` "
                "[env CLAIMWATCH_WORKER_URL; default http://127.0.0.1:6066]"
            )
        ),
    ] = None,
    bootstrap: BootstrapOption = None,
    topic_prefix: PrefixOption = None,
) -> None:
    """Serve the tools of the file's MCP servers as one MCP server, each result arbitrated.

    Over stdio (the default) the agent starts this command itself; its logs go to stderr.
    """
    try:
        loaded = load_config(config)
        address = host_port(http) if http is not None else None
    except PolicyError as exc:
        fail(str(exc), 2)
    except ValueError as exc:
        fail(f"--http: {exc}", 2)
    settings = loaded.settings.overridden(
        worker_url=worker_url, bootstrap=bootstrap, topic_prefix=topic_prefix
    )
    try:
        run = importlib.import_module("claimwatch.gateway.run")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "mcp":
            raise
        fail("the gateway needs the MCP SDK: pip install 'claimwatch[mcp]'", 2)
    try:
        run.serve(loaded, settings, address, _version())
    except (PolicyError, MappingError) as exc:
        fail(str(exc), 2)
