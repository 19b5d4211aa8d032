"""A client nobody here wrote: the MCP Inspector's command-line mode against our gateway.

The Inspector (npm `@modelcontextprotocol/inspector`, `make tools`) starts the server of
`tests.support.mcp_clients.STDIO_SERVER` over stdio as a desktop client would, lists its
tools and calls them through it; the assertions read the JSON it prints. The example
server's two tools disagree about an invoice (examples/mcp/server.py); INV-404 and
INV-BROKEN make them fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_clients import HTTP_SERVER, STDIO_SERVER, inspector_cli, serve_http

#: the example server's tools: each takes one string argument, the invoice id
EXAMPLE_TOOLS = {"get_invoice_status", "get_report_status"}
#: the Inspector's exit codes (its CLI's EXIT_CODES)
EXIT_OK = 0
EXIT_TOOL_ERROR = 5


def _tools(listed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools of a `tools/list` result, by name."""
    return {tool["name"]: tool for tool in listed["result"]["tools"]}


def _assert_example_tools(tools: dict[str, dict[str, Any]]) -> None:
    """The example's tools are listed with their own input schemas (one string: invoice_id)."""
    assert EXAMPLE_TOOLS <= set(tools), sorted(tools)
    for name in EXAMPLE_TOOLS:
        schema = tools[name]["inputSchema"]
        assert "object" == schema["type"]
        assert ["invoice_id"] == schema["required"]
        assert "string" == schema["properties"]["invoice_id"]["type"]
        assert tools[name]["description"], f"{name} has no description"


def test_lists_the_tools_over_stdio(tmp_path: Path) -> None:
    """`tools/list` shows every tool with its schema, and no schema-portability error."""
    run = inspector_cli(STDIO_SERVER, "tools/list", "--strict", tmp_home=tmp_path)
    assert EXIT_OK == run.returncode, run.stderr
    _assert_example_tools(_tools(run.result))


def test_lists_the_tools_over_streamable_http(tmp_path: Path) -> None:
    """The same list over streamable HTTP, the URL a remote client is given."""
    with serve_http(HTTP_SERVER) as url:
        run = inspector_cli([url], "tools/list", tmp_home=tmp_path)
    assert EXIT_OK == run.returncode, run.stderr
    _assert_example_tools(_tools(run.result))


@pytest.mark.parametrize(
    ("tool", "invoice", "status"),
    [
        ("get_invoice_status", "INV-2", "paid"),
        ("get_report_status", "INV-2", "unpaid"),
    ],
)
def test_calls_a_tool(tmp_path: Path, tool: str, invoice: str, status: str) -> None:
    """`tools/call` with `--tool-arg k=v` returns the tool's structured result and its text."""
    run = inspector_cli(
        STDIO_SERVER,
        "tools/call",
        "--tool-name",
        tool,
        "--tool-arg",
        f"invoice_id={invoice}",
        tmp_home=tmp_path,
    )
    assert EXIT_OK == run.returncode, run.stderr
    result = run.result["result"]
    assert result["isError"] is False
    assert {"invoice_id": invoice, "status": status} == {
        key: result["structuredContent"][key] for key in ("invoice_id", "status")
    }
    texts = [block["text"] for block in result["content"] if "text" == block["type"]]
    assert any(f'"status": "{status}"' in text for text in texts), texts


@pytest.mark.parametrize(
    ("tool", "invoice", "message"),
    [
        ("get_invoice_status", "INV-404", "invoice INV-404 not found"),
        ("get_report_status", "INV-BROKEN", "reporting warehouse query failed"),
    ],
)
def test_a_failing_tool_answers_is_error(
    tmp_path: Path, tool: str, invoice: str, message: str
) -> None:
    """A tool that raises reaches the Inspector as `isError` with its message (exit 5)."""
    run = inspector_cli(
        STDIO_SERVER,
        "tools/call",
        "--tool-name",
        tool,
        "--tool-arg",
        f"invoice_id={invoice}",
        tmp_home=tmp_path,
    )
    assert EXIT_TOOL_ERROR == run.returncode, run.stderr
    result = run.result["result"]
    assert result["isError"] is True
    texts = [block["text"] for block in result["content"] if "text" == block["type"]]
    assert any(message in text for text in texts), texts


def test_an_unknown_tool_is_refused(tmp_path: Path) -> None:
    """Calling a tool the server does not list is an error the Inspector names, not a hang."""
    run = inspector_cli(
        STDIO_SERVER,
        "tools/call",
        "--tool-name",
        "no_such_tool",
        "--tool-arg",
        "invoice_id=INV-2",
        tmp_home=tmp_path,
    )
    assert EXIT_TOOL_ERROR == run.returncode, run.stderr
    assert "tool_not_found" == run.result["error"]["code"]
