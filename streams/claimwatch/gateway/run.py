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
from dataclasses import dataclass

from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import GatewayConfig, GatewaySettings
from claimwatch.gateway.documents import DocumentTools, build_documents
from claimwatch.gateway.gate import Gate
from claimwatch.gateway.governance.stage import build_gate
from claimwatch.gateway.own_tools import own_tools
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.server import Gateway


@dataclass(frozen=True)
class Plugged:
    """What the configuration plugs into the MCP server."""

    hook: Arbitrator
    own_tools: Sequence[OwnTool]
    gate: Gate
    documents: DocumentTools | None


def plug_in(config: GatewayConfig, settings: GatewaySettings) -> Plugged:
    """The result hook, claimwatch's own tools, the governance gate and the document tools.

    The hook is the arbitrator of the `tools:` section (a tool it does not map passes
    through untouched); the own tools answer from the worker `settings` names; the gate
    governs the tools with `checks:`; the document tools are there with `documents:`.
    A section that cannot be used raises PolicyError or MappingError naming file and line.
    """
    hook = Arbitrator.from_config(config.tools_raw, config.source, settings)
    gate = build_gate(config.governance_raw, config.tools_raw, config.source, settings)
    documents = build_documents(config.documents_raw, config.source, settings)
    tools = [*own_tools(settings), *(documents.tools() if documents is not None else ())]
    return Plugged(hook, tools, gate, documents)


def serve(
    config: GatewayConfig,
    settings: GatewaySettings,
    address: tuple[str, int] | None,
    version: str,
) -> None:
    """Serve over stdio (`address` None) or streamable HTTP until stopped (Ctrl-C).

    A `tools:` section that cannot be used raises PolicyError or MappingError first.
    """
    plugged = plug_in(config, settings)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="claimwatch gateway: %(message)s"
    )
    server = Gateway(
        config.servers,
        hook=plugged.hook,
        own_tools=plugged.own_tools,
        gate=plugged.gate,
        version=version,
    )

    async def run() -> None:
        try:
            async with plugged.hook:  # its client and outbox are closed when the gateway stops
                await (server.run_stdio() if address is None else server.run_http(*address))
        finally:
            await plugged.gate.aclose()
            if plugged.documents is not None:
                await plugged.documents.aclose()

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the gateway, not with a trace
        asyncio.run(run())
