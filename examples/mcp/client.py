"""Call the demo MCP server's two tools, publish their results as claims, print the decision.

    MCP_DEMO_BILLING_KEY=$(openssl rand -hex 32) python examples/mcp/client.py --invoice INV-1

starts `server.py` over stdio, calls `get_invoice_status` and `get_report_status` for each
`--invoice`, maps every result to a claim with `mappings.yaml` (signing billing's claims
with the key its `signing` entry names), publishes them with the claimwatch publisher,
then waits on the worker for each invoice's decision that lists those claims
(`Client.decide`: `GET /facts/{subject}/{field}?covering=...&wait=...`, no polling) and
prints it explained. Each published claim is printed first as a JSON line `claim {...}`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from claimwatch import Client, DecisionTimeout, Publisher, explain
from claimwatch.client.mcp_adapter import ToolMappings, call_tool_claim, load_mappings
from claimwatch.policy.signing_keys import client_key
from claimwatch.wire.kafka import env_bootstrap, env_prefix

HERE = Path(__file__).resolve().parent
TOOLS = ("get_invoice_status", "get_report_status")


def _now() -> str:
    """The call time as RFC 3339 UTC."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def signing_keys(mappings: ToolMappings) -> dict[str, bytes | None]:
    """The key each tool's claims are signed with (None: unsigned)."""
    keys: dict[str, bytes | None] = {}
    for tool, mapping in mappings.tools.items():
        where = mapping.signing
        keys[tool] = client_key(where.env, where.file) if where is not None else None
    return keys


async def call_tools(invoices: list[str], mappings: ToolMappings) -> list[dict[str, Any]]:
    """Start the server over stdio and map every tool's answer about every invoice."""
    keys = signing_keys(mappings)
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "server.py")])
    claims = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for invoice in invoices:
            for tool in TOOLS:
                claims.append(
                    await call_tool_claim(
                        session,
                        mappings,
                        tool,
                        {"invoice_id": invoice},
                        now=_now(),
                        signing_key=keys[tool],
                        agent_id="mcp-demo-client",
                        decide="on_arrival",  # signed over: Client.decide cannot add it
                    )
                )
    return claims


async def main(args: argparse.Namespace) -> int:
    """Call, publish, wait, print; 0 when every fact is resolved, 1 when any is not."""
    mappings = load_mappings(args.mappings)
    claims = await call_tools(args.invoice, mappings)
    for claim in claims:
        print("claim", json.dumps(claim, sort_keys=True), flush=True)
    if args.worker_url is None:
        async with Publisher(args.bootstrap, args.topic_prefix) as publisher:
            await publisher.publish_many(claims)
        return 0
    # publish, then wait on the worker for each fact's decision that lists these claims
    async with Client(args.worker_url, args.bootstrap, args.topic_prefix) as client:
        try:
            decided = await client.decide(claims, timeout=args.timeout)
        except DecisionTimeout as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1
    code = 0
    for decision in decided.values():
        print("decision", json.dumps(decision, sort_keys=True), flush=True)
        print(explain(decision), flush=True)
        code = code or (0 if decision["outcome"] == "resolved" else 1)
    return code


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invoice", action="append", required=True, help="invoice id (repeat)")
    parser.add_argument("--mappings", default=str(HERE / "mappings.yaml"))
    parser.add_argument("--bootstrap", default=env_bootstrap())
    parser.add_argument("--topic-prefix", default=env_prefix())
    parser.add_argument("--worker-url", help="a worker's HTTP address, to print its decisions")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait in all")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
