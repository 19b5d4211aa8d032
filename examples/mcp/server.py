"""A tiny MCP server (MCPServer, stdio) whose two tools disagree about an invoice.

`get_invoice_status` is the billing system (it owns payment status) and says `paid`;
`get_report_status` is a reporting replica and still says `unpaid`. Invoice `INV-404`
is unknown to billing (an error whose text says "not found"), and `INV-BROKEN` makes the
reporting tool fail outright (an error of no known kind). Both raise `ToolError`: the SDK
sends its text to the caller (any other exception's text stays on the server).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("claimwatch-demo-tools")


def _now() -> str:
    """The wall-clock time as RFC 3339 UTC (when the tool looked)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@server.tool()
def get_invoice_status(invoice_id: str) -> dict[str, Any]:
    """Billing: the payment status of an invoice, from the ledger that owns it."""
    if invoice_id == "INV-404":
        raise ToolError(f"invoice {invoice_id} not found")
    return {"invoice_id": invoice_id, "status": "paid", "as_of": _now()}


@server.tool()
def get_report_status(invoice_id: str) -> dict[str, Any]:
    """Reporting: the payment status of an invoice, from a nightly replica."""
    if invoice_id == "INV-BROKEN":
        raise ToolError("reporting warehouse query failed")
    return {"invoice_id": invoice_id, "status": "unpaid", "as_of": _now()}


if __name__ == "__main__":
    server.run("stdio")
