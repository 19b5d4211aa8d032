"""The gateway config's `tools:` section: each tool's claim mapping, and what an escalation does.

A tool's entry is the MCP adapter's per-tool mapping (`claimwatch.client.mcp_adapter`) plus
`on_escalate`: `annotate` (the default) returns the result with the decision attached,
`error` returns it as an error result with the explanation. An entry's `checks` key is
governance's (`claimwatch.gateway.governance`); an entry with only `checks` makes no
claims. Errors name the config file,
the line and the key, like the policy loader's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from pydantic import Field, ValidationError

from claimwatch.client.mcp_adapter import MappingError, ToolMapping
from claimwatch.gateway.config import ConfigSource
from claimwatch.policy.signing_keys import client_key
from claimwatch.policy.source import dotted

OnEscalate = Literal["annotate", "error"]
#: A tool entry's key naming its governance checks (read by `governance.config`, not here).
GOVERNANCE_KEY: Final = "checks"


class GatewayToolMapping(ToolMapping):
    """One tool's claim mapping in the gateway config, with what an `escalate` does."""

    on_escalate: OnEscalate = Field(
        default="annotate",
        description="annotate: the result with the decision attached; error: an error result",
    )


def parse_tools(tools_raw: object, source: ConfigSource) -> dict[str, GatewayToolMapping]:
    """Each tool's validated mapping; MappingError naming file, line, key and reason."""
    if tools_raw is None:
        return {}
    if not isinstance(tools_raw, Mapping):
        raise _error(source, (), "must be a mapping of tool names to claim mappings")
    tools: dict[str, GatewayToolMapping] = {}
    for name, raw in tools_raw.items():
        if not isinstance(name, str) or not name:
            raise _error(source, (str(name),), "a tool name must be a non-empty string")
        mapping = (
            {k: v for k, v in raw.items() if k != GOVERNANCE_KEY}
            if isinstance(raw, Mapping)
            else raw
        )
        if isinstance(raw, Mapping) and GOVERNANCE_KEY in raw and not mapping:
            continue  # governed only: no claim is made of its results
        try:
            tools[name] = GatewayToolMapping.model_validate(mapping)
        except ValidationError as exc:
            error = exc.errors()[0]
            reason = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                reason = "unknown key"
            raise _error(source, (name, *(str(p) for p in error["loc"])), reason) from None
    return tools


def _error(source: ConfigSource, loc: tuple[str, ...], reason: str) -> MappingError:
    """The error of one key of the section: `file:line: tools.key: reason`."""
    where = ("tools", *loc)
    line = source.line(where)
    at = f"{source.path}:{line}" if line is not None else source.path
    return MappingError(f"{at}: {dotted(where)}: {reason}")


def signing_keys(tools: Mapping[str, GatewayToolMapping], source: ConfigSource) -> dict[str, bytes]:
    """The key each signing tool's claims are signed with (its `kid` is the mapping's).

    A key that is not set, unreadable or too short is a MappingError naming the tool's
    `signing` key: the gateway does not start rather than send claims a worker refuses.
    """
    keys: dict[str, bytes] = {}
    for name, mapping in tools.items():
        where = mapping.signing
        if where is None:
            continue
        try:
            key = client_key(where.env, where.file)
        except ValueError as exc:
            raise _error(source, (name, "signing"), str(exc)) from None
        if key is not None:
            keys[name] = key
    return keys
