"""The governance walkthrough's MCP server (MCPServer, stdio or `--http PORT`).

Its tools return what the gateway's checks argue about (docs/gateway-governance.md):
- `fetch_page(url)`: a page with two e-mail addresses at the URL's host;
- `read_record(patient_id, purpose, requester)`: a patient note with a medical record
  number, a diagnosis code (PHI) and an e-mail address;
- `export_statement(account_id, purpose, requester)`: an account statement with an IBAN;
- `send_email(to, body)`: "sends" a message (kept in memory) and echoes what it received;
- `outbox()`: the messages sent so far, so a denied call can be seen to have reached nothing;
- `picture()`: an image, which no check can read.
"""

from __future__ import annotations

import argparse
import base64
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent

server = MCPServer("claimwatch-governance-demo")
#: The messages `send_email` received, in order.
SENT: list[dict[str, str]] = []
#: A 1x1 transparent PNG.
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
RECORD = (
    "Patient Jane Roe, MRN 00482913, seen 2026-11-30 for E11.9. Contact: jane.roe@mail.example.net"
)
STATEMENT = "IBAN DE89 3704 0044 0532 0130 00, balance 1250.00 EUR"


@server.tool()
def fetch_page(url: str) -> str:
    """The page at `url` (a contact page naming two addresses at the URL's host)."""
    host = urlsplit(url).hostname
    if not host:
        raise ToolError(f"{url!r} has no host")
    return f"Write to alice@{host} or bob@{host}."


@server.tool()
def read_record(patient_id: str, purpose: str, requester: str) -> str:
    """A patient's record, for a stated purpose and requester."""
    return RECORD


@server.tool()
def export_statement(account_id: str, purpose: str, requester: str) -> str:
    """An account statement, for a stated purpose and requester."""
    return STATEMENT


@server.tool()
def send_email(to: str, body: str) -> dict[str, Any]:
    """Send a message; the answer echoes what this server received."""
    SENT.append({"to": to, "body": body})
    return {"sent": True, "to": to, "body": body}


@server.tool()
def outbox() -> dict[str, Any]:
    """The messages sent so far, oldest first."""
    return {"messages": list(SENT)}


@server.tool()
def picture() -> CallToolResult:
    """An image (no text a check could scan)."""
    return CallToolResult(
        content=[
            ImageContent(type="image", data=PIXEL, mime_type="image/png"),
            TextContent(type="text", text="a picture"),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on this port")
    args = parser.parse_args()
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
