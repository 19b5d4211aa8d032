"""The tools the agent sees: the union, a shared name prefixed by server, own tools first."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.routing import OwnTool, Route, build_routes
from mcp.types import CallToolResult, Tool

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}}


def tool(name: str, **extra: Any) -> Tool:
    return Tool(name=name, input_schema=SCHEMA, **extra)


async def _nothing(arguments: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[])


OWN = OwnTool("claimwatch_decision", "a fact's decision", {"type": "object"}, _nothing)


@pytest.mark.parametrize(
    ("listings", "expected"),
    [
        ({"a": ["x"], "b": ["y"]}, {"x": ("a", "x"), "y": ("b", "y")}),
        (
            {"a": ["x", "only_a"], "b": ["x"]},
            {"a__x": ("a", "x"), "b__x": ("b", "x"), "only_a": ("a", "only_a")},
        ),
        ({"a": ["x", "x"]}, {"x": ("a", "x")}),
        (
            {"a": ["claimwatch_decision"]},
            {
                "a__claimwatch_decision": ("a", "claimwatch_decision"),
                "claimwatch_decision": (None, "claimwatch_decision"),
            },
        ),
        ({}, {"claimwatch_decision": (None, "claimwatch_decision")}),
    ],
)
def test_routes(
    listings: dict[str, list[str]], expected: dict[str, tuple[str | None, str]]
) -> None:
    routes = build_routes({s: [tool(n) for n in names] for s, names in listings.items()}, [OWN])
    expected.setdefault("claimwatch_decision", (None, "claimwatch_decision"))
    assert {k: Route(k, s, t) for k, (s, t) in expected.items()} == dict(routes.by_name)
    assert list(routes.by_name) == [t.name for t in routes.tools]


def test_a_prefixed_tool_keeps_everything_but_its_name() -> None:
    """Schemas, description, annotations: the upstream's own."""
    shared = tool("x", description="d", output_schema={"type": "object"}, title="X")
    routes = build_routes({"a": [shared], "b": [tool("x")]})
    assert shared.model_copy(update={"name": "a__x"}) == routes.tools[0]
