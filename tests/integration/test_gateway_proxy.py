"""`claimwatch gateway` as an agent meets it: the SDK's client over stdio and streamable HTTP.

Two upstreams written for the test (tests/support/mcp_upstream.py): `alpha` over stdio and
`beta` over streamable HTTP, both offering `lookup`, `slow` and `cancelled_tags`. No Kafka:
the gateway's result hook is the default passthrough here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from claimwatch.gateway.config import GatewaySettings
from claimwatch.gateway.own_tools import own_tools
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import Tool

from tests.support.gateway import (
    TRANSPORTS,
    agent,
    free_port,
    running,
    text_of,
    upstream_command,
    wire,
    write_config,
)
from tests.support.mcp_upstream import RICH
from tests.support.paths import REPO

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


@pytest.fixture(scope="module")
def beta_url() -> Iterator[str]:
    """The `beta` upstream over streamable HTTP, for the whole module."""
    port = free_port()
    with running([*upstream_command("beta"), "--http", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def config(tmp_path: Path, beta_url: str) -> Path:
    return write_config(tmp_path / "gateway.yaml", beta_url)


def _alpha() -> Client:
    command = upstream_command("alpha")
    return Client(StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO)))


async def _direct_tools(beta_url: str) -> dict[str, dict[str, Tool]]:
    async with _alpha() as alpha, Client(beta_url) as beta:
        return {
            "alpha": {t.name: t for t in (await alpha.list_tools()).tools},
            "beta": {t.name: t for t in (await beta.list_tools()).tools},
        }


async def test_lists_the_union_with_the_upstream_schemas(
    transport: str, config: Path, beta_url: str
) -> None:
    """Shared names are prefixed by server; every tool keeps its own schemas and annotations.

    claimwatch's own tools are listed beside them.
    """
    direct = await _direct_tools(beta_url)
    async with agent(transport, config) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    shared = {"lookup", "slow", "cancelled_tags"}
    expected = {f"{server}__{name}" for server in ("alpha", "beta") for name in shared}
    expected |= {"alpha_rich", "alpha_fail", "alpha_crash", "beta_sum"}
    own = {tool.name for tool in own_tools(GatewaySettings())}
    assert expected | own == set(listed)
    for exposed, tool in listed.items():
        if exposed in own:
            continue
        server, _, name = exposed.rpartition("__")
        if not server:
            server, name = exposed.split("_", 1)[0], exposed
        upstream = direct[server][name]
        assert upstream.model_copy(update={"name": exposed}) == tool


async def test_calls_reach_the_server_that_owns_the_tool(transport: str, config: Path) -> None:
    """The prefixed and the unprefixed names reach their own server, arguments intact."""
    async with agent(transport, config) as client:
        alpha = await client.call_tool("alpha__lookup", {"key": "abcd", "scale": 3})
        beta = await client.call_tool("beta__lookup", {"key": "abcd"})
        total = await client.call_tool("beta_sum", {"a": 40, "b": 2})
    assert {"server": "alpha", "key": "abcd", "value": 12} == alpha.structured_content
    assert {"server": "beta", "key": "abcd", "value": 4} == beta.structured_content
    assert {"result": 42} == total.structured_content


async def test_an_unmapped_result_passes_through_unchanged(transport: str, config: Path) -> None:
    """Text, image, annotations, structured content and `_meta`: the JSON the upstream sent."""
    async with _alpha() as alpha:
        direct = await alpha.call_tool("alpha_rich", {})
    async with agent(transport, config) as client:
        through = await client.call_tool("alpha_rich", {})
    assert wire(direct) == wire(through)
    assert RICH.structured_content == through.structured_content


async def test_an_upstream_error_result_stays_an_error(transport: str, config: Path) -> None:
    """`isError` from the upstream comes back as `isError`, with the upstream's text."""
    async with agent(transport, config) as client:
        result = await client.call_tool("alpha_fail", {"reason": "ledger is read-only"})
    assert result.is_error
    assert "ledger is read-only" in text_of(result)


async def test_an_unknown_tool_is_a_protocol_error(transport: str, config: Path) -> None:
    """A name nobody offers is refused as invalid params, and the gateway goes on."""
    async with agent(transport, config) as client:
        with pytest.raises(MCPError, match="unknown tool 'no_such_tool'"):
            await client.call_tool("no_such_tool", {})
        assert {"result": 3} == (
            await client.call_tool("beta_sum", {"a": 1, "b": 2})
        ).structured_content


@pytest.mark.parametrize("server", ["alpha", "beta"])
async def test_a_cancelled_call_is_cancelled_upstream(
    transport: str, server: str, config: Path
) -> None:
    """The agent gives up on a slow call: the upstream's handler is cancelled too."""
    tag = f"{transport}-{server}"
    async with agent(transport, config) as client:
        with anyio.move_on_after(2) as scope:
            await client.call_tool(f"{server}__slow", {"tag": tag, "seconds": 60})
        assert scope.cancelled_caught
        seen: list[str] = []
        for _ in range(50):  # the notice travels agent -> gateway -> upstream
            listed = await client.call_tool(f"{server}__cancelled_tags", {})
            seen = (listed.structured_content or {}).get("result", [])
            if tag in seen:
                break
            await anyio.sleep(0.1)
    assert tag in seen


async def test_a_crashed_upstream_is_an_error_result_and_the_gateway_goes_on(
    transport: str, config: Path
) -> None:
    """The stdio upstream dies mid-call: an error naming it; beta answers; alpha comes back."""
    async with agent(transport, config) as client:
        crashed = await client.call_tool("alpha_crash", {})
        other = await client.call_tool("beta_sum", {"a": 2, "b": 3})
        again = await client.call_tool("alpha__lookup", {"key": "ab"})
    assert crashed.is_error
    assert "'alpha'" in text_of(crashed)
    assert {"result": 5} == other.structured_content
    assert {"server": "alpha", "key": "ab", "value": 2} == again.structured_content


async def test_an_upstream_that_does_not_answer_is_an_error_result_in_time(
    transport: str, tmp_path: Path, beta_url: str
) -> None:
    """A call past the server's `timeout` is an error result naming it, not a hang."""
    config = write_config(tmp_path / "gateway.yaml", beta_url, alpha_timeout="2s")
    async with agent(transport, config) as client:
        started = time.monotonic()
        result = await client.call_tool("alpha__slow", {"tag": "hang", "seconds": 30})
        waited = time.monotonic() - started
        other = await client.call_tool("beta_sum", {"a": 1, "b": 1})
    assert result.is_error
    assert "'alpha' did not answer" in text_of(result)
    assert 1.5 < waited < 10
    assert {"result": 2} == other.structured_content


async def test_a_server_that_is_down_is_reported_by_name(
    transport: str, tmp_path: Path, beta_url: str
) -> None:
    """An upstream nothing listens for: its calls fail by name; the others are served."""
    down = {"ledger": {"url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": "3s"}}
    config = write_config(tmp_path / "gateway.yaml", beta_url, extra=down)
    async with agent(transport, config) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        total = await client.call_tool("beta_sum", {"a": 2, "b": 2})
    assert {"beta_sum", "alpha_rich"} <= listed
    assert {"result": 4} == total.structured_content
