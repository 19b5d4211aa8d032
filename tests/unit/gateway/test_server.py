"""The gateway in process: every upstream result through the hook, own tools routed.

The upstream is the test's `alpha` server over stdio (a subprocess). And the command's
refusals of a bad file or flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claimwatch.gateway.config import Upstream
from claimwatch.gateway.gate import Checked, Gated
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.server import Gateway
from mcp import Client
from mcp.types import CallToolResult, TextContent

from tests.support.cli import run_cli
from tests.support.gateway import text_of, upstream_command
from tests.support.paths import REPO

ALPHA = Upstream(command=upstream_command("alpha"), cwd=str(REPO), timeout=20_000_000)


class Recorder:
    """A hook that records its calls and marks the result it returns."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any], bool]] = []
        self.fail = fail

    async def __call__(
        self, tool: str, arguments: dict[str, Any], result: CallToolResult
    ) -> CallToolResult:
        self.calls.append((tool, arguments, result.is_error))
        if self.fail:
            raise RuntimeError("hook broke")
        marked = dict(result.structured_content or {}, claimwatch={"outcome": "resolved"})
        return result.model_copy(update={"structured_content": marked})


async def _echo(arguments: dict[str, Any]) -> CallToolResult:
    if arguments.get("boom"):
        raise ValueError("no such fact")
    return CallToolResult(content=[TextContent(type="text", text=repr(sorted(arguments)))])


OWN = OwnTool("claimwatch_decision", "a fact's decision", {"type": "object"}, _echo)


async def test_every_upstream_result_goes_through_the_hook() -> None:
    """The hook sees the exposed name, the arguments and the upstream result (errors too)."""
    hook = Recorder()
    gateway = Gateway({"alpha": ALPHA}, hook=hook, own_tools=[OWN])
    async with gateway.serving(), Client(gateway.server) as client:
        rich = await client.call_tool("alpha_rich", {})
        failed = await client.call_tool("alpha_fail", {"reason": "x"})
        own = await client.call_tool("claimwatch_decision", {"subject": "s"})
    assert {"outcome": "resolved"} == (rich.structured_content or {})["claimwatch"]
    assert failed.is_error
    assert "['subject']" == text_of(own)
    assert [("alpha_rich", {}, False), ("alpha_fail", {"reason": "x"}, True)] == hook.calls


async def test_a_failing_hook_returns_the_upstream_result() -> None:
    """A result is never lost: the hook's failure leaves the upstream's result as it came."""
    gateway = Gateway({"alpha": ALPHA}, hook=Recorder(fail=True))
    async with gateway.serving(), Client(gateway.server) as client:
        result = await client.call_tool("lookup", {"key": "k"})  # alpha alone: no prefix
    assert {"server": "alpha", "key": "k", "value": 1} == result.structured_content


async def test_own_tools_are_listed_first_and_their_failures_are_error_results() -> None:
    gateway = Gateway({"alpha": ALPHA}, own_tools=[OWN])
    async with gateway.serving(), Client(gateway.server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        failed = await client.call_tool("claimwatch_decision", {"boom": True})
    assert "claimwatch_decision" == names[0]
    assert "alpha_rich" in names
    assert failed.is_error
    assert "claimwatch_decision failed: ValueError: no such fact" == text_of(failed)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--http", "localhost"], "--http: 'localhost': write HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "--http: '127.0.0.1:99999': write HOST:PORT"),
        ([], "gateway.yaml:2: servers.a.url: 'ftp://x/' is no http(s) URL"),
    ],
)
def test_the_command_refuses_a_bad_file_or_flag(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    """Exit 2, one line naming what to fix, no traceback."""
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "servers:\n  a: {url: 'ftp://x/'}\n" if not args else "servers:\n  a: {url: 'http://x/'}\n"
    )
    done = run_cli("gateway", "--config", str(config), *args)
    assert 2 == done.returncode
    assert expected in done.stderr.decode()
    assert b"Traceback" not in done.stderr


class RaisingGate:
    """A gate that governs every tool and fails in the phase it is told to."""

    def __init__(self, phase: str) -> None:
        self.phase = phase

    def governs(self, tool: str) -> bool:
        return True

    async def on_arguments(self, tool: str, server: str | None, arguments: dict[str, Any]) -> Gated:
        if self.phase == "arguments":
            raise RuntimeError("gate broke")
        return Gated(arguments)

    async def on_result(
        self, tool: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked:
        raise RuntimeError("gate broke")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(
    ("phase", "expected_text"),
    [
        ("arguments", "the call is denied (nothing was forwarded)"),
        ("result", "the result is withheld"),
    ],
)
async def test_a_raising_gate_denies_and_makes_no_claim(phase: str, expected_text: str) -> None:
    """A gate that fails is a deny, never a silent allow; the hook never sees the result."""
    hook = Recorder()
    gateway = Gateway({"alpha": ALPHA}, hook=hook, gate=RaisingGate(phase))
    async with gateway.serving(), Client(gateway.server) as client:
        result = await client.call_tool("lookup", {"key": "k"})
    assert (True, []) == (result.is_error, hook.calls)
    assert text_of(result).startswith("claimwatch governance failed on lookup: RuntimeError")
    assert text_of(result).endswith(expected_text)
