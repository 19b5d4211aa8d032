"""Two small upstream MCP servers for the gateway tests (`python -m tests.support.mcp_upstream`).

`alpha` and `beta` both offer `lookup`, `slow` and `cancelled` (so the gateway prefixes
them), and each has tools of its own. `slow` sleeps until cancelled and `cancelled` lists
the tags of the `slow` calls that were cancelled, so a test can see a cancellation arrive.
`alpha_crash` ends the process; `alpha_fail` is an `isError` result; `alpha_rich` returns a
fixed result of several content kinds, structured content and `_meta` (the passthrough).

`ledger` is one region of a billing system whose every invoice has the one status given
with `--status`, so that two ledgers started with different statuses disagree about it:
`invoice_status` and `payment_status` answer `{"invoice_id", "status"}` (invoice
`INV-BROKEN` makes them fail: an `isError` result), `invoice_document` answers `RICH`.

    python -m tests.support.mcp_upstream alpha                # stdio
    python -m tests.support.mcp_upstream beta --http 8765     # streamable HTTP on 127.0.0.1
    python -m tests.support.mcp_upstream ledger --status paid
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

#: The result `alpha_rich` always returns (the tests compare it with what the agent receives).
RICH = CallToolResult(
    content=[
        TextContent(type="text", text="balance 1250.00 USD", annotations={"priority": 0.5}),
        ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
    ],
    structured_content={"balance": "1250.00", "currency": "USD", "nested": {"n": [1, 2.5, None]}},
    _meta={"upstream/trace": "t-1", "unicode": "Ω ✓"},
)


#: The invoice a ledger fails to read.
BROKEN_INVOICE = "INV-BROKEN"
#: What a ledger says when it fails to read an invoice.
LEDGER_FAILURE = "ledger query failed"


def ledger(status: str) -> MCPServer:
    """A billing ledger that says `status` of every invoice."""
    server = MCPServer(f"test-ledger-{status}", log_level="WARNING")

    def read(invoice_id: str) -> dict[str, Any]:
        if invoice_id == BROKEN_INVOICE:
            raise ToolError(f"{LEDGER_FAILURE}: {invoice_id}")
        return {"invoice_id": invoice_id, "status": status}

    @server.tool()
    def invoice_status(invoice_id: str) -> dict[str, Any]:
        """The status of an invoice's balance in this region's ledger."""
        return read(invoice_id)

    @server.tool()
    def payment_status(invoice_id: str) -> dict[str, Any]:
        """The payment status of an invoice in this region's ledger."""
        return read(invoice_id)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def invoice_document(invoice_id: str) -> CallToolResult:
        """The invoice's document: text, an image, structured content and _meta."""
        structured = {**(RICH.structured_content or {}), "invoice_id": invoice_id}
        return RICH.model_copy(update={"structured_content": structured})

    return server


def build(name: str) -> MCPServer:
    """The `alpha` or `beta` server."""
    server = MCPServer(f"test-upstream-{name}", log_level="WARNING")
    cancelled: list[str] = []

    @server.tool(description=f"{name}: the value of a key")
    def lookup(key: str, scale: int = 1) -> dict[str, Any]:
        return {"server": name, "key": key, "value": len(key) * scale}

    @server.tool(description=f"{name}: sleeps until cancelled")
    async def slow(tag: str, seconds: float = 60.0) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            cancelled.append(tag)
            raise
        return f"{tag} slept"

    @server.tool(description=f"{name}: the tags of the slow calls that were cancelled")
    def cancelled_tags() -> list[str]:
        return list(cancelled)

    if name == "alpha":

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def alpha_rich() -> CallToolResult:
            """A fixed result of text, an image, structured content and _meta."""
            return RICH

        @server.tool()
        def alpha_fail(reason: str) -> str:
            """Fails with `reason` (an isError result)."""
            raise ToolError(reason)

        @server.tool()
        def alpha_crash() -> str:
            """Ends the server's process at once."""
            os._exit(3)

    else:

        @server.tool()
        def beta_sum(a: int, b: int) -> int:
            """The sum of two integers."""
            return a + b

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=("alpha", "beta", "ledger"))
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on this port")
    parser.add_argument("--status", default="paid", help="ledger: the status of every invoice")
    args = parser.parse_args()
    server = ledger(args.status) if args.name == "ledger" else build(args.name)
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
