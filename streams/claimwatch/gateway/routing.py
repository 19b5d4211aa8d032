"""Which tools the agent sees and where each call goes: the union of the upstreams' tools.

A tool keeps its upstream name unless two servers offer the same name: then both are exposed
as `<server>__<tool>`. claimwatch's own tools (`OwnTool`) keep their names, and an upstream
tool of the same name is prefixed. Pure: the gateway rebuilds the table from each listing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp.types import CallToolResult, Tool

#: Between a server's name and its tool's, where two servers offer the same tool name.
SEPARATOR: Final = "__"


@dataclass(frozen=True)
class OwnTool:
    """A tool the gateway answers itself (claimwatch's own: decision, explanation, conflicts).

    `call` takes the call's arguments and returns the result the agent receives; the
    gateway does not pass it through the result hook.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    call: Callable[[dict[str, Any]], Awaitable[CallToolResult]]
    output_schema: dict[str, Any] | None = None

    def tool(self) -> Tool:
        return Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
        )


@dataclass(frozen=True)
class Route:
    """Where an exposed tool name goes: a server's tool, or an own tool (`server` None)."""

    exposed: str
    server: str | None
    tool: str


@dataclass(frozen=True)
class Routes:
    """The tools the agent sees, in listing order, and the route of each."""

    tools: tuple[Tool, ...]
    by_name: Mapping[str, Route]


def build_routes(listings: Mapping[str, Sequence[Tool]], own: Sequence[OwnTool] = ()) -> Routes:
    """The union of the servers' tools (`listings`: server -> its tools) and the own tools."""
    reserved = {t.name for t in own}
    counts = Counter(name for tools in listings.values() for name in {t.name for t in tools})
    tools: list[Tool] = [t.tool() for t in own]
    by_name: dict[str, Route] = {t.name: Route(t.name, None, t.name) for t in own}
    for server, server_tools in listings.items():
        for tool in server_tools:
            shared = counts[tool.name] > 1 or tool.name in reserved
            exposed = f"{server}{SEPARATOR}{tool.name}" if shared else tool.name
            if exposed in by_name:  # a tool listed twice by one server, or a name taken
                continue
            by_name[exposed] = Route(exposed, server, tool.name)
            tools.append(
                tool if exposed == tool.name else tool.model_copy(update={"name": exposed})
            )
    return Routes(tuple(tools), by_name)
