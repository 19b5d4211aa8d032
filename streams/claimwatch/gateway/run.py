"""Run the gateway: the arbitrator and claimwatch's own tools plugged into the MCP server.

Kept apart from the command (`claimwatch.cli.gateway`), which imports it only when it
runs: the MCP SDK is an extra (`claimwatch[mcp]`), and `claimwatch --help` lists every
command without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence

from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import GatewayConfig, GatewaySettings
from claimwatch.gateway.own_tools import own_tools
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.server import Gateway


def plug_in(
    config: GatewayConfig, settings: GatewaySettings
) -> tuple[Arbitrator, Sequence[OwnTool]]:
    """The result hook every upstream result passes through, and claimwatch's own tools.

    The hook is the arbitrator of the `tools:` section (a tool it does not map passes
    through untouched); the own tools answer from the worker `settings` names.
    """
    return Arbitrator.from_config(config.tools_raw, config.source, settings), own_tools(settings)


def serve(
    config: GatewayConfig,
    settings: GatewaySettings,
    address: tuple[str, int] | None,
    version: str,
) -> None:
    """Serve over stdio (`address` None) or streamable HTTP until stopped (Ctrl-C).

    A `tools:` section that cannot be used raises PolicyError or MappingError first.
    """
    hook, tools = plug_in(config, settings)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="claimwatch gateway: %(message)s"
    )
    server = Gateway(config.servers, hook=hook, own_tools=tools, version=version)

    async def run() -> None:
        async with hook:  # its client and outbox are closed when the gateway stops
            await (server.run_stdio() if address is None else server.run_http(*address))

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the gateway, not with a trace
        asyncio.run(run())
