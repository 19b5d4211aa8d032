"""Third-party MCP clients (npm), run as their users run them, against an MCP server of ours.

`make tools` installs them at the exact versions of `tools/npm/package-lock.json` into
`.cache/npm`, with a Node 22 binary from the npm registry in `.cache/npm/node_modules/.bin`
(the Inspector 2.x needs Node >= 22.19; the machine's own may be older). Every run puts that
directory first on PATH, so the clients and anything they spawn with `node` get that Node.
A missing client is an AssertionError that says to run `make tools`, never a skip.

- The MCP Inspector's command-line mode (`mcp-inspector --cli`): `inspector_cli`.
- The MCP conformance suite against a streamable-HTTP URL (`conformance server`):
  `conformance_server`; `serve_http` starts an HTTP server at such a URL.

The server they test is named once, here: `STDIO_SERVER` and `HTTP_SERVER`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import CLAIMWATCH
from tests.support.gateway import running
from tests.support.kafka import free_port
from tests.support.paths import REPO

#: The MCP server the third-party clients test, as a stdio command run in the repository
#: root: claimwatch's gateway over examples/mcp/server.py (examples/mcp/gateway.yaml). No
#: worker answers at the file's worker URL, so every mapped result comes back at once with
#: the `claimwatch` note saying it is unarbitrated.
STDIO_SERVER: tuple[str, ...] = (
    str(CLAIMWATCH),
    "gateway",
    "--config",
    "examples/mcp/gateway.yaml",
)
#: The same gateway over streamable HTTP at http://127.0.0.1:{port}/mcp (`serve_http`).
HTTP_SERVER: tuple[str, ...] = (*STDIO_SERVER, "--http", "127.0.0.1:{port}")
#: What the server needs in its environment: the key the gateway signs billing's claims with.
SERVER_ENV: dict[str, str] = {"MCP_DEMO_BILLING_KEY": "third-party-client-tests-key-0123456789"}

#: where `make tools` puts the npm clients' commands, and the Node they run on
NPM_BIN = REPO / ".cache" / "npm" / "node_modules" / ".bin"
#: the longest one client run may take (each takes 1-2 s here)
RUN_TIMEOUT_S = 120.0
#: the conformance suite's result directory: server-<scenario>-<ISO time with dashes>
_RESULT_DIR = re.compile(r"server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z")


def npm_tool(name: str) -> Path:
    """The path of an npm client's command; an AssertionError naming `make tools` if absent."""
    path = NPM_BIN / name
    assert path.exists(), f"{path} is not installed: run `make tools`"
    return path


def npm_env(tmp_home: Path) -> dict[str, str]:
    """The environment of this process, the npm clients' Node first on PATH, a scratch HOME.

    The Inspector keeps a server catalog and client settings under HOME; a scratch one keeps a
    test run from reading or writing the user's.
    """
    npm_tool("node")
    return {
        **os.environ,
        "PATH": f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_home),
        "NO_COLOR": "1",
    }


@dataclass(frozen=True)
class InspectorRun:
    """One Inspector CLI run: its exit code, its JSON result and its error text."""

    returncode: int
    result: dict[str, Any]
    stderr: str


def inspector_cli(server: Sequence[str], method: str, *args: str, tmp_home: Path) -> InspectorRun:
    """Run `mcp-inspector --cli <server...> --method <method> <args...>` in the repository.

    `server` is a stdio server command (a list) or a single streamable-HTTP URL. The output is
    `--format json`: `{"result": ...}` on stdout, or `{"error": ...}` as the last line of
    stderr (after the stdio server's own log lines, kept there for a failing test's report).
    Exit codes are the Inspector's: 0 ok, 4 server unreachable, 5 the tool answered `isError`.
    """
    command = [
        str(npm_tool("mcp-inspector")),
        "--cli",
        "--cwd",
        str(REPO),
        "--method",
        method,
        *args,
        "--format",
        "json",
    ]
    if len(server) > 1:  # a stdio command: its environment, then its words after `--`
        command += [*(f"-e{k}={v}" for k, v in SERVER_ENV.items()), "--", *server]
    else:
        command += list(server)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=npm_env(tmp_home),
        cwd=REPO,
        check=False,
    )
    output = done.stdout.strip() or (done.stderr.strip().splitlines() or [""])[-1]
    try:
        parsed = json.loads(output)
    except json.JSONDecodeError as error:
        raise AssertionError(
            f"the Inspector printed no JSON (exit {done.returncode}): {error}\n"
            f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
        ) from error
    assert isinstance(parsed, dict), f"the Inspector printed {parsed!r}, not a JSON object"
    return InspectorRun(done.returncode, parsed, done.stderr)


def conformance_server(
    url: str, out_dir: Path, tmp_home: Path, suite: str = "active"
) -> dict[str, list[dict[str, Any]]]:
    """Run the conformance suite's server scenarios of `suite` against `url`.

    Returns each scenario's checks (the suite's `checks.json`: id, status SUCCESS | FAILURE |
    WARNING | INFO, errorMessage, details), by scenario name. The suite's own exit code says
    only whether anything failed, so it is not checked here.
    """
    command = [
        str(npm_tool("conformance")),
        "server",
        "--url",
        url,
        "--suite",
        suite,
        "--output-dir",
        str(out_dir),
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=npm_env(tmp_home),
        cwd=out_dir,
        check=False,
    )
    checks: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out_dir.glob("server-*/checks.json")):
        named = _RESULT_DIR.fullmatch(path.parent.name)
        assert named is not None, f"{path}: not a conformance result directory"
        checks[named["scenario"]] = json.loads(path.read_text(encoding="utf-8"))
    assert checks, (
        f"the conformance suite wrote no results (exit {done.returncode})\n"
        f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    )
    return checks


@contextmanager
def serve_http(command: Sequence[str]) -> Iterator[str]:
    """Start the streamable-HTTP MCP server `command` on a free port; yield its URL; stop it.

    `{port}` in the command's words is replaced by a free loopback port; the server must answer
    at `http://127.0.0.1:{port}/mcp`.
    """
    port = free_port()
    args = [word.replace("{port}", str(port)) for word in command]
    with running(args, port, SERVER_ENV, quiet=True):
        yield f"http://127.0.0.1:{port}/mcp"
