"""`claimwatch gateway --config gateway.yaml`: the MCP gateway between an agent and its servers.

The agent lists this command as its one MCP server (stdio by default, streamable HTTP with
`--http HOST:PORT`); the file lists the real servers. Exit 2 for a bad file or flag.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer

from claimwatch.cli.common import BootstrapOption, PrefixOption, fail
from claimwatch.client.mcp_adapter import MappingError
from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import GatewayConfig, GatewaySettings, load_config
from claimwatch.gateway.own_tools import own_tools
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.server import HTTP_PATH, Gateway
from claimwatch.policy.source import PolicyError


def plug_in(
    config: GatewayConfig, settings: GatewaySettings
) -> tuple[Arbitrator, Sequence[OwnTool]]:
    """The result hook every upstream result passes through, and claimwatch's own tools.

    The hook is the arbitrator of the `tools:` section (a tool it does not map passes
    through untouched); the own tools answer from the worker `settings` names.
    """
    return Arbitrator.from_config(config.tools_raw, config.source, settings), own_tools(settings)


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
        hook, tools = plug_in(loaded, settings)
    except (PolicyError, MappingError) as exc:
        fail(str(exc), 2)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="claimwatch gateway: %(message)s"
    )
    server = Gateway(loaded.servers, hook=hook, own_tools=tools, version=_version())

    async def serve() -> None:
        async with hook:  # its client and outbox are closed when the gateway stops
            await (server.run_stdio() if address is None else server.run_http(*address))

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the gateway, not with a trace
        asyncio.run(serve())
