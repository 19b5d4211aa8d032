"""The one place every upstream tool result passes through on its way back to the agent.

The gateway calls the hook with the tool's name as the agent sees it (`<server>__<tool>`
where two servers share a name), the call's arguments and the upstream's result, and
returns what the hook returns. The arbitration (`claimwatch.gateway.arbitrate`) is such a
hook; without one, results pass through unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp.types import CallToolResult


class ResultHook(Protocol):
    """Takes an upstream tool result, returns the result the agent receives."""

    async def __call__(
        self, tool: str, arguments: dict[str, Any], result: CallToolResult
    ) -> CallToolResult: ...


async def passthrough(
    tool: str, arguments: dict[str, Any], result: CallToolResult
) -> CallToolResult:
    """The default hook: the upstream result, unchanged."""
    return result
