"""Without the `mcp` extra: every command lists, and `gateway` says how to get the SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import REPO

#: Runs the CLI with the MCP SDK made unimportable, as in an install without the extra.
NO_MCP = (
    "import sys; sys.modules.update({'mcp': None, 'mcp.types': None});"
    "from claimwatch.cli.main import main; sys.argv[0] = 'claimwatch'; main()"
)


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--help"], 0, "gateway"),
        (
            ["gateway", "--config", "examples/mcp/gateway.yaml"],
            2,
            "pip install 'claimwatch[mcp]'",
        ),
    ],
)
def test_the_cli_without_the_mcp_extra(args: list[str], code: int, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_MCP, *args], cwd=REPO, capture_output=True, text=True
    )
    assert (code, True, False) == (
        done.returncode,
        said in done.stdout + done.stderr,
        "Traceback" in done.stderr,
    ), done.stderr
