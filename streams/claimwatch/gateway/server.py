"""The gateway: an MCP server to the agent, an MCP client to each upstream server.

It lists the union of the upstreams' tools (`routing`) and claimwatch's own, forwards each
call to the server that owns the tool, and returns its result through the result hook. A
governed tool's call passes the gate (`gate`) on its arguments before it is forwarded and
on its result before the hook; a gate that fails denies, never allows. The
upstream's protocol errors are forwarded as they came; an upstream that is down, crashes
or does not answer becomes an error result naming it, so the agent always gets an answer
and the gateway stays up. A call the agent cancels is cancelled upstream (the SDK sends
`notifications/cancelled` when the awaiting task is cancelled).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import uvicorn
from mcp import MCPError
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from claimwatch.gateway.config import HTTP_PATH, Upstream
from claimwatch.gateway.gate import OPEN, Checked, Gate, Gated
from claimwatch.gateway.hook import ResultHook, passthrough
from claimwatch.gateway.routing import OwnTool, Route, Routes, build_routes
from claimwatch.gateway.upstream import UpstreamFailure, UpstreamServer, describe

log = logging.getLogger(__name__)
NAME: Final = "claimwatch-gateway"
#: The streamable-HTTP endpoint's path (as MCP servers conventionally serve it).
INSTRUCTIONS: Final = (
    "The tools of the configured MCP servers, their results checked by claimwatch."
)


def error_result(text: str) -> CallToolResult:
    """A tool result the agent reads as a failure (`isError`), with the reason as text."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class Gateway:
    """The routing state and the MCP handlers; `serving()` holds the upstream connections."""

    def __init__(
        self,
        servers: Mapping[str, Upstream],
        *,
        hook: ResultHook = passthrough,
        own_tools: Sequence[OwnTool] = (),
        gate: Gate = OPEN,
        version: str = "",
    ) -> None:
        self.specs, self.hook, self.own = dict(servers), hook, {t.name: t for t in own_tools}
        self.gate = gate
        self.upstreams: dict[str, UpstreamServer] = {}
        self.routes = build_routes({}, own_tools)
        self.server: Server[Any] = Server(
            NAME,
            version=version,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[Gateway]:
        """Hold the upstream connections while the body runs.

        The first listing starts at once without holding up the agent's handshake (a slow
        server is waited for on use).
        """
        async with anyio.create_task_group() as tasks:
            self.upstreams = {n: UpstreamServer(n, s, tasks) for n, s in self.specs.items()}
            tasks.start_soon(self.refresh)
            try:
                yield self
            finally:
                for upstream in self.upstreams.values():
                    upstream.drop()

    async def refresh(self) -> Routes:
        """List every upstream's tools at once (a failing one keeps its last listing)."""

        async def listing(upstream: UpstreamServer) -> None:
            try:
                await upstream.list_tools()
            except UpstreamFailure as exc:
                log.warning("%s", exc)

        async with anyio.create_task_group() as tasks:
            for upstream in self.upstreams.values():
                tasks.start_soon(listing, upstream)
        listings = {name: u.tools for name, u in self.upstreams.items()}
        self.routes = build_routes(listings, list(self.own.values()))
        return self.routes

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        routes = await self.refresh()
        return ListToolsResult(tools=list(routes.tools))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        name, arguments = params.name, params.arguments
        route = self.routes.by_name.get(name) or (await self.refresh()).by_name.get(name)
        if route is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}")
        if not self.gate.governs(name):
            result = await self._forward(route, arguments, params)
            return (
                result
                if route.server is None
                else await self._through_hook(name, arguments or {}, result)
            )
        gated = await self._gate_arguments(name, route.server, dict(arguments or {}))
        if gated.refused is not None:  # denied or escalated: nothing is forwarded
            return gated.refused
        result = await self._forward(route, gated.arguments, params)
        checked = await self._gate_result(name, route.server, gated, result)
        if not checked.passed or route.server is None:  # withheld results make no claim
            return checked.result
        return await self._through_hook(name, gated.arguments, checked.result)

    async def _forward(
        self, route: Route, arguments: dict[str, Any] | None, params: CallToolRequestParams
    ) -> CallToolResult:
        """The owning server's result, an own tool's, or an error result naming the failure."""
        if route.server is None:
            return await self._call_own(self.own[route.tool], arguments or {})
        try:
            return await self.upstreams[route.server].call_tool(route.tool, arguments, params.meta)
        except UpstreamFailure as exc:
            return error_result(str(exc))

    async def _gate_arguments(
        self, name: str, server: str | None, arguments: dict[str, Any]
    ) -> Gated:
        """The gate's answer on the arguments; a failing gate denies (nothing is forwarded)."""
        try:
            return await self.gate.on_arguments(name, server, arguments)
        except Exception as exc:
            log.exception("governance failed on the arguments of %s: the call is denied", name)
            return Gated(
                arguments,
                refused=error_result(
                    f"claimwatch governance failed on {name}: {describe(exc)}; "
                    "the call is denied (nothing was forwarded)"
                ),
            )

    async def _gate_result(
        self, name: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked:
        """The gate's answer on the result; a failing gate withholds it (never a silent allow)."""
        try:
            return await self.gate.on_result(name, server, gated, result)
        except Exception as exc:
            log.exception("governance failed on the result of %s: the result is withheld", name)
            return Checked(
                error_result(
                    f"claimwatch governance failed on {name}: {describe(exc)}; "
                    "the result is withheld"
                ),
                passed=False,
            )

    async def _call_own(self, tool: OwnTool, arguments: dict[str, Any]) -> CallToolResult:
        try:
            return await tool.call(arguments)
        except MCPError:
            raise
        except Exception as exc:
            log.exception("claimwatch tool %s failed", tool.name)
            return error_result(f"{tool.name} failed: {describe(exc)}")

    async def _through_hook(
        self, name: str, arguments: dict[str, Any], result: CallToolResult
    ) -> CallToolResult:
        """The hook's result; the upstream's own when the hook fails (a result is never lost)."""
        try:
            return await self.hook(name, arguments, result)
        except Exception:
            log.exception("the result hook failed on %s: the result goes back unchanged", name)
            return result

    async def run_stdio(self) -> None:
        """Serve the agent on this process's stdin and stdout until it closes them."""
        options = self.server.create_initialization_options(NotificationOptions())
        async with self.serving(), stdio_server() as (read, write):
            await self.server.run(read, write, options)

    async def run_http(self, host: str, port: int) -> None:
        """Serve the agent over streamable HTTP at http://HOST:PORT/mcp until stopped."""
        app = self.server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        web = uvicorn.Server(config)
        async with self.serving():
            await web.serve()
