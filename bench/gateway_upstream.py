"""examples/mcp/server.py served over streamable HTTP, for the gateway benchmark.

The example runs over stdio; the benchmark serves the same `MCPServer` (its two tools as
written) over streamable HTTP on a loopback port, so that one upstream process answers
the calls made directly and the calls the gateway forwards.

    .venv/bin/python -m bench.gateway_upstream PORT
"""

from __future__ import annotations

import logging
import runpy
import sys
from pathlib import Path

EXAMPLE = Path("examples/mcp/server.py")


def main() -> None:
    port = int(sys.argv[1])
    server = runpy.run_path(str(EXAMPLE), run_name="bench_upstream")["server"]
    server.settings.log_level = "WARNING"  # uvicorn's: no access-log line per request
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
