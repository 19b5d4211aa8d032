"""The gateway's configuration file (`gateway.yaml`): settings, upstream servers, tool mappings.

Read with the policy loader's YAML reader, so every error names the file, the line and the
key. The `tools:` section is not interpreted here: it is handed on raw, with the file's node
tree (`ConfigSource`) for the lines of its keys, to whoever builds the result hook.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from claimwatch.models.durations import US_PER_S, Duration
from claimwatch.policy.source import (
    MAX_POLICY_BYTES,
    PolicyError,
    decode_utf8,
    dotted,
    line_of,
    read_bounded,
    read_yaml,
)

#: The path the gateway serves streamable HTTP at (`--http HOST:PORT`).
HTTP_PATH: Final = "/mcp"
#: How long an upstream may take to connect or to answer one call before the agent gets an
#: error result naming it.
DEFAULT_UPSTREAM_TIMEOUT_US: Final = 60 * US_PER_S
#: A server's name becomes a tool-name prefix (`<server>__<tool>`): letters, digits, `_`, `-`.
SERVER_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_DOCS: Final = "see docs/gateway.md"


def http_url(url: str | None, example: str) -> str | None:
    """`url` when it is None or an http(s) URL with a host; else a ValueError showing `example`."""
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{url!r} is no http(s) URL: write e.g. {example}")
    return url


class Upstream(BaseModel):
    """One upstream MCP server: a stdio command, or a streamable-HTTP URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = Field(
        default=None, min_length=1, description="stdio: the program and its arguments"
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: variables added to the inherited safe set"
    )
    cwd: str | None = Field(default=None, description="stdio: the working directory")
    url: str | None = Field(default=None, description="streamable HTTP: the endpoint URL")
    headers: dict[str, str] = Field(
        default_factory=dict, description="streamable HTTP: headers sent with every request"
    )
    timeout: Duration = Field(
        default=DEFAULT_UPSTREAM_TIMEOUT_US,
        description="the longest a connection or one call may take",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return http_url(url, "http://127.0.0.1:8765/mcp")

    @model_validator(mode="after")
    def _one_transport(self) -> Upstream:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either `command` (a stdio server: [program, args...]) or `url` "
                "(a streamable-HTTP server), not both and not neither"
            )
        if self.url is not None and (self.env or self.cwd is not None):
            raise ValueError("`env` and `cwd` are for a stdio server (`command`), not a `url`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` are for a streamable-HTTP server (`url`), not a `command`")
        return self

    @property
    def timeout_seconds(self) -> float:
        return self.timeout / US_PER_S


class GatewayFile(BaseModel):
    """The file's top-level keys; `tools`, `governance` and `documents` are checked where used."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker_url: str | None = None
    bootstrap: str | None = None
    topic_prefix: str | None = None
    decide_timeout: Duration = 2 * US_PER_S
    servers: dict[str, Upstream] = Field(min_length=1)
    tools: dict[str, Any] = Field(default_factory=dict)
    governance: dict[str, Any] | None = None
    documents: dict[str, Any] | None = None

    @field_validator("servers")
    @classmethod
    def _server_names(cls, servers: dict[str, Upstream]) -> dict[str, Upstream]:
        for name in servers:
            if not SERVER_NAME.match(str(name)):
                raise ValueError(
                    f"server name {name!r}: use letters, digits, `_` and `-` "
                    "(it prefixes tool names as <server>__<tool>)"
                )
        return servers


@dataclass(frozen=True)
class GatewaySettings:
    """Where the gateway finds the worker and the broker.

    As for `Client`, None means the `CLAIMWATCH_*` environment variable, else the default.
    """

    worker_url: str | None = None
    bootstrap: str | None = None
    topic_prefix: str | None = None
    decide_timeout: float = 2.0

    def overridden(
        self,
        *,
        worker_url: str | None = None,
        bootstrap: str | None = None,
        topic_prefix: str | None = None,
    ) -> GatewaySettings:
        """These settings with the command line's flags (those given) over the file's."""
        return replace(
            self,
            worker_url=worker_url if worker_url is not None else self.worker_url,
            bootstrap=bootstrap if bootstrap is not None else self.bootstrap,
            topic_prefix=topic_prefix if topic_prefix is not None else self.topic_prefix,
        )


@dataclass(frozen=True)
class ConfigSource:
    """The file the configuration came from, for errors about its `tools:` section."""

    path: str
    text: str = field(repr=False, default="")
    root: yaml.Node | None = field(repr=False, default=None)

    def line(self, loc: tuple[int | str, ...]) -> int | None:
        """1-based line of a key, e.g. `("tools", "get_balance", "subject")`."""
        return line_of(self.root, loc)

    def error(self, loc: tuple[int | str, ...], reason: str) -> PolicyError:
        """An error naming this file, the key's line and the key."""
        return PolicyError(self.path, self.line(loc), dotted(loc), reason)


@dataclass(frozen=True)
class GatewayConfig:
    """A loaded configuration: the settings, the upstreams and the raw sections.

    `tools:`, `governance:` and `documents:` are validated by the parts they configure
    (the result hook, the governance stage, the document tools), with `source` for lines.
    """

    settings: GatewaySettings
    servers: dict[str, Upstream]
    tools_raw: dict[str, Any]
    source: ConfigSource
    governance_raw: dict[str, Any] | None = None
    documents_raw: dict[str, Any] | None = None


def parse_config(text: str, path: str = "<gateway>") -> GatewayConfig:
    """Validate configuration text; PolicyError names the file, line, key and what to do."""
    data, root = read_yaml(text, path)
    if not isinstance(data, dict):
        raise PolicyError(
            path, 1, "", f"a gateway file must be a mapping with `servers:` ({_DOCS})"
        )
    try:
        parsed = GatewayFile.model_validate(data)
    except ValidationError as exc:
        # a misspelt key first: it is why a required one looks missing
        error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        loc = tuple(p for p in error["loc"] if not str(p).startswith("function-"))
        loc = tuple(p for p in loc if p not in ("str", "int", "float", "list[str]"))
        reason = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            reason = f"unknown key ({_DOCS} for the keys)"
        elif error["type"] == "missing":
            reason = f"missing: name at least one upstream MCP server ({_DOCS})"
        raise PolicyError(path, line_of(root, loc), dotted(loc), reason) from None
    settings = GatewaySettings(
        worker_url=parsed.worker_url,
        bootstrap=parsed.bootstrap,
        topic_prefix=parsed.topic_prefix,
        decide_timeout=parsed.decide_timeout / US_PER_S,
    )
    return GatewayConfig(
        settings,
        parsed.servers,
        parsed.tools,
        ConfigSource(path, text, root),
        # a section written without a value (`documents:`) is there, empty: not absent
        governance_raw=_section(data, "governance", parsed.governance),
        documents_raw=_section(data, "documents", parsed.documents),
    )


def _section(data: dict[str, Any], key: str, value: dict[str, Any] | None) -> dict[str, Any] | None:
    return {} if value is None and key in data else value


def load_config(path: str | Path, *, max_bytes: int = MAX_POLICY_BYTES) -> GatewayConfig:
    """Read and validate a gateway file of at most `max_bytes` bytes."""
    p = Path(path)
    return parse_config(decode_utf8(read_bounded(p, max_bytes), str(p)), str(p))
