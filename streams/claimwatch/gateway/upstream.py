"""One upstream MCP server, held open by the gateway: connect, list its tools, call one.

The connection lives in a task of the gateway's task group (an MCP client session must be
entered and left in one task). A connection that fails, or dies under a call (a crashed
process, a closed HTTP session), is reported as `UpstreamFailure`, naming the server; the
next call connects again. Every wait is bounded by the server's `timeout`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import httpx2
from anyio.abc import TaskGroup
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, RequestParamsMeta, Tool
from pydantic import ValidationError

from claimwatch.gateway.config import Upstream

log = logging.getLogger(__name__)
#: Pages of a tool listing read at most (a server whose cursor never ends is cut off).
MAX_PAGES: Final = 100
#: A stdio command whose program is this word runs on the gateway's own interpreter (an
#: activated virtual environment or not, `python` finds the packages the gateway has).
PYTHON: Final = "python"
#: The streamable-HTTP client's timeouts: connect and write, and the long-lived reads.
_HTTP_TIMEOUT: Final = httpx2.Timeout(30, read=300)


class UpstreamFailure(Exception):
    """The server could not be reached, crashed or did not answer: the message names it."""


def describe(exc: BaseException) -> str:
    """One line for an error, the innermost of an exception group first."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


class UpstreamServer:
    """A named upstream and its current connection (none until first used)."""

    def __init__(self, name: str, spec: Upstream, task_group: TaskGroup) -> None:
        self.name, self.spec, self._tasks = name, spec, task_group
        self._client: Client | None = None
        self._closed = anyio.Event()
        self._lock = anyio.Lock()
        #: The last listing that succeeded: still shown while the server is down.
        self.tools: tuple[Tool, ...] = ()

    def _client_for(self) -> Client:
        spec = self.spec
        if spec.command is not None:
            program = sys.executable if spec.command[0] == PYTHON else spec.command[0]
            target: Any = StdioServerParameters(
                command=program, args=spec.command[1:], env=spec.env or None, cwd=spec.cwd
            )
        else:
            assert spec.url is not None  # the config allows one or the other
            target = spec.url if not spec.headers else _http_transport(spec.url, spec.headers)
        return Client(target, cache=None)

    async def _hold(self, ready: anyio.Event, failed: list[str]) -> None:
        """Open the connection, publish it, keep it until closed; record why it could not."""
        closed = self._closed
        try:
            async with self._client_for() as client:
                self._client = client
                ready.set()
                await closed.wait()
        except Exception as exc:
            failed.append(describe(exc))
            log.warning("upstream %s: %s", self.name, failed[-1])
        finally:
            self._client = None
            ready.set()

    async def _connected(self) -> Client:
        async with self._lock:
            if self._client is not None:
                return self._client
            self._closed = anyio.Event()
            ready, failed = anyio.Event(), list[str]()
            self._tasks.start_soon(self._hold, ready, failed)
            with anyio.move_on_after(self.spec.timeout_seconds):
                await ready.wait()
            if self._client is None:
                self._closed.set()  # a connection still starting is given up
                why = (
                    failed[0] if failed else f"no connection within {self.spec.timeout_seconds:g} s"
                )
                raise UpstreamFailure(f"upstream {self.name!r} is unavailable: {why}")
            return self._client

    def drop(self) -> None:
        """Close the connection (the next use opens a new one)."""
        self._closed.set()
        self._client = None

    async def list_tools(self) -> tuple[Tool, ...]:
        """Every page of the server's tools; UpstreamFailure when it cannot say."""
        client = await self._connected()
        tools: list[Tool] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self.spec.timeout_seconds):
                for _ in range(MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    if (cursor := page.next_cursor) is None:
                        break
        except (MCPError, TimeoutError, ValidationError) as exc:
            self._after(exc)
            why = describe(exc)
            raise UpstreamFailure(f"upstream {self.name!r} did not list its tools: {why}") from None
        self.tools = tuple(tools)
        return self.tools

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        meta: RequestParamsMeta | None = None,
        progress: ProgressFnT | None = None,
    ) -> CallToolResult:
        """The server's result; its own protocol errors (MCPError) are raised as they came.

        UpstreamFailure: no connection, the connection died, no answer within the timeout, or
        a result the SDK refuses (off the protocol schema, or off the tool's output schema).
        """
        client = await self._connected()
        seconds = self.spec.timeout_seconds
        try:
            with anyio.fail_after(seconds + 1):  # the SDK's own timeout comes first
                return await client.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=seconds,
                    progress_callback=progress,
                    meta=meta,
                )
        except MCPError as exc:
            if exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                raise
            self._after(exc)
            why = "did not answer" if exc.code == REQUEST_TIMEOUT else "closed the connection"
            raise UpstreamFailure(f"upstream {self.name!r} {why} ({tool}): {exc.message}") from None
        except TimeoutError:
            raise UpstreamFailure(
                f"upstream {self.name!r} did not answer ({tool}) within {seconds:g} s"
            ) from None
        except (ValidationError, RuntimeError) as exc:
            raise UpstreamFailure(
                f"upstream {self.name!r} returned an unusable result ({tool}): {describe(exc)}"
            ) from None

    def _after(self, exc: BaseException) -> None:
        """Drop a connection that is closed, so the next call opens a new one."""
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            self.drop()
