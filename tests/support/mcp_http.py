"""Serve a stdio example MCP server over streamable HTTP, for clients that only speak HTTP.

The MCP conformance suite tests a server at a URL; `examples/mcp/server.py` runs over stdio.
This loads the example's server object from its file and serves the SDK's own streamable-HTTP
app (`streamable_http_app()`, the same on the SDK's FastMCP 1.x and MCPServer 2.x) with
uvicorn, at `http://HOST:PORT/mcp`::

    .venv/bin/python -m tests.support.mcp_http examples/mcp/server.py --port 8765
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path
from typing import Any

import uvicorn

#: where the SDK's streamable-HTTP app answers
MCP_PATH = "/mcp"


def load_server(path: Path, name: str = "server") -> Any:
    """The MCP server object named `name` defined at the top level of the file `path`."""
    namespace = runpy.run_path(str(path), run_name="claimwatch_mcp_example")
    if name not in namespace:
        raise SystemExit(f"{path}: defines no `{name}` (the MCP server object to serve)")
    return namespace[name]


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="the Python file that defines the server")
    parser.add_argument("--name", default="server", help="its server object's name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    app = load_server(args.file, args.name).streamable_http_app()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
