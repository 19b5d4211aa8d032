"""MCP adapter: turn an MCP tool result (`mcp.types.CallToolResult`) into a claim envelope.

A small declarative mapping per tool (YAML, validated here) says which call arguments or
result keys give the subject and the value, which field the tool answers, the source,
lineage and authority label, and how `not_found` / `forbidden` / `unavailable` are
recognised from a structured key or the error text. `isError` never becomes a value: it
is the matching error status, else `error`. The mapping itself is pure (time is passed in);
only `call_tool_claim` talks to an MCP session.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, Protocol
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claimwatch.core.signing import canonical_bytes, signed
from claimwatch.models.policy import SigningKey
from claimwatch.models.statuses import Decide
from claimwatch.policy.source import line_of

ErrorStatus = Literal["not_found", "forbidden", "unavailable", "error"]
#: Error statuses a structured key may name directly.
_ERROR_STATUSES: Final = ("not_found", "forbidden", "unavailable", "error")
#: Longest error text kept in a claim's `error_detail`.
MAX_DETAIL: Final = 500
_FIELD_NAME = re.compile(r"\{([^{}]+)\}")


class MappingError(ValueError):
    """A mapping file that cannot be used, or a result the mapping cannot attribute to a fact."""


class ErrorRules(BaseModel):
    """How a tool's errors are recognised: a structured key, then phrases in the error text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status_key: str | None = Field(
        default=None,
        description="result key naming the status: not_found, forbidden, unavailable or error",
    )
    not_found: list[str] = Field(
        default_factory=lambda: ["not found", "no such", "does not exist", "unknown id", "404"]
    )
    forbidden: list[str] = Field(
        default_factory=lambda: [
            "forbidden",
            "permission denied",
            "not authorized",
            "unauthorized",
            "access denied",
            "401",
            "403",
        ]
    )
    unavailable: list[str] = Field(
        default_factory=lambda: [
            "unavailable",
            "timed out",
            "timeout",
            "connection refused",
            "try again later",
            "503",
        ]
    )


class ToolMapping(BaseModel):
    """What one tool's result claims: subject, field and value; source, lineage, authority."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str = Field(
        min_length=1,
        description="template filled from the call arguments and then the result's keys, "
        "e.g. invoice:{invoice_id} (use arguments: an error result has no keys)",
    )
    field: str = Field(min_length=1, description="the predicate the tool answers")
    value: str = Field(
        min_length=1, description="dotted key path of the value in the result; `$` = all of it"
    )
    source: str = Field(min_length=1)
    lineage: str | None = None
    authority: str | None = Field(default=None, description="informational label only")
    observed_at: str | None = Field(
        default=None, description="result key holding the observation time (else the call time)"
    )
    contract_version: str | None = None
    errors: ErrorRules = Field(default_factory=ErrorRules)
    signing: SigningKey | None = Field(
        default=None, description="where the source's HMAC key is (env or file), to sign claims"
    )

    @field_validator("subject")
    @classmethod
    def _known_filters(cls, subject: str) -> str:
        return checked_subject(subject)


class ToolMappings(BaseModel):
    """A mapping file: one entry per MCP tool name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: dict[str, ToolMapping]


class ToolResult(Protocol):
    """The parts of `mcp.types.CallToolResult` the adapter reads."""

    @property
    def is_error(self) -> bool: ...

    @property
    def structured_content(self) -> dict[str, Any] | None: ...

    @property
    def content(self) -> Sequence[Any]: ...


def parse_mappings(text: str, path: str = "<mappings>") -> ToolMappings:
    """Validate a YAML mapping file; MappingError names the file, line, key and reason."""
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise MappingError(f"{path}: invalid YAML: {exc}") from None
    try:
        return ToolMappings.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        line = line_of(root, loc)
        where = f"{path}:{line}" if line is not None else path
        key = ".".join(str(p) for p in loc) or "(top level)"
        reason = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            reason = "unknown key"
        raise MappingError(f"{where}: {key}: {reason}") from None


def load_mappings(path: str | Path) -> ToolMappings:
    """Read and validate a mapping file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MappingError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_mappings(text, str(path))


def result_text(result: ToolResult) -> str:
    """The text content blocks of a result, joined by newlines."""
    parts = [getattr(b, "text", "") for b in result.content if getattr(b, "type", "") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))


def result_payload(result: ToolResult) -> dict[str, Any] | None:
    """The result's structured content, else its text parsed as a JSON object, else None."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    try:
        parsed = json.loads(result_text(result))
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def error_status(rules: ErrorRules, payload: Mapping[str, Any] | None, text: str) -> ErrorStatus:
    """The status of a failed call: the structured key first, then phrases, else `error`."""
    if payload is not None and rules.status_key is not None:
        named = payload.get(rules.status_key)
        if named in _ERROR_STATUSES:
            return named  # type: ignore[no-any-return]
    lowered = text.lower()
    kinds: tuple[tuple[ErrorStatus, list[str]], ...] = (
        ("not_found", rules.not_found),
        ("forbidden", rules.forbidden),
        ("unavailable", rules.unavailable),
    )
    for status, phrases in kinds:
        if any(phrase.lower() in lowered for phrase in phrases):
            return status
    return "error"


def _lookup(payload: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted key path (`$`: the whole payload); KeyError when absent."""
    if path == "$":
        return dict(payload)
    node: Any = payload
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def _host(value: str) -> str:
    """The host name of a URL, lower-cased; MappingError when it names none."""
    try:
        host = urlsplit(value).hostname
    except ValueError:
        host = None
    if not host:
        raise MappingError(f"{value!r} is no URL with a host name (e.g. https://example.org/x)")
    return host.lower()


#: The filters a subject template may apply to a name: `{url|host}`.
FILTERS: Final[Mapping[str, Callable[[str], str]]] = {"host": _host}


def subject_problem(template: str) -> str | None:
    """Why a subject template cannot be filled (an unknown filter), or None when it can."""
    for match in _FIELD_NAME.finditer(template):
        _, bar, name = match.group(1).partition("|")
        if bar and name not in FILTERS:
            return f"`{match.group(0)}`: unknown filter `|{name}` (known: {', '.join(FILTERS)})"
    return None


def checked_subject(template: str) -> str:
    """`template` when it can be filled; else a ValueError saying why (for validators)."""
    problem = subject_problem(template)
    if problem is not None:
        raise ValueError(problem)
    return template


def fill_subject(template: str, arguments: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    """The subject template filled from the arguments, then the payload's top-level keys.

    `{name}` is the scalar's text; `{name|host}` the host name of the URL it holds,
    lower-cased. MappingError when a name is missing or not a scalar, the filter is
    unknown, or the value has no host.
    """
    names = {**payload, **arguments}

    def fill(match: re.Match[str]) -> str:
        name, bar, filter_name = match.group(1).partition("|")
        if name not in names or isinstance(names[name], (dict, list)) or names[name] is None:
            raise MappingError(f"subject {template!r}: no scalar `{name}` in arguments or result")
        value = str(names[name])
        if not bar:
            return value
        if filter_name not in FILTERS:
            raise MappingError(f"subject {template!r}: {subject_problem(template)}")
        try:
            return FILTERS[filter_name](value)
        except MappingError as exc:
            raise MappingError(f"subject {template!r}: `{name}`: {exc}") from None

    return _FIELD_NAME.sub(fill, template)


def claim_from_result(
    result: ToolResult,
    tool: str,
    mapping: ToolMapping,
    *,
    arguments: Mapping[str, Any],
    now: str,
    claim_id: str | None = None,
    agent_id: str | None = None,
    trace_id: str | None = None,
    signing_key: bytes | None = None,
    decide: Decide | None = None,
) -> dict[str, Any]:
    """The claim envelope of one tool result (`now`: RFC 3339 time of the call).

    Without `claim_id` the id is derived from the claim's content, so the same result
    published twice is one claim. With `signing_key` the claim carries its signature.
    `decide`: the claim's `decide` mode (e.g. `on_arrival`), signed over with the rest
    (not part of a derived id: the same result is one claim whatever it asks).
    """
    payload = result_payload(result)
    text = result_text(result)
    status: str = "ok"
    detail: str | None = None
    value: Any = None
    key = mapping.errors.status_key
    named = payload.get(key) if payload is not None and key is not None else None
    if result.is_error:
        status, detail = error_status(mapping.errors, payload, text), text
    elif named in _ERROR_STATUSES:  # a tool that reports its failure in a structured key
        status, detail = str(named), text
    else:
        try:
            value = _lookup(payload if payload is not None else {}, mapping.value)
        except KeyError:
            status = "error"
            detail = f"the result has no `{mapping.value}` (the mapping's value key): {text}"
    envelope: dict[str, Any] = {
        "subject": fill_subject(mapping.subject, arguments, payload or {}),
        "field": mapping.field,
        "source": mapping.source,
        "observed_at": _observed_at(mapping, payload, now),
        "status": status,
        "tool": tool,
    }
    if status == "ok":
        envelope["value"] = value
    if detail:
        envelope["error_detail"] = detail[:MAX_DETAIL]
    optional = {
        "lineage": mapping.lineage,
        "authority": mapping.authority,
        "contract_version": mapping.contract_version,
        "agent_id": agent_id,
        "trace_id": trace_id,
    }
    envelope.update({k: v for k, v in optional.items() if v is not None})
    if claim_id is None:
        claim_id = "mcp-" + hashlib.sha256(canonical_bytes(envelope)).hexdigest()[:32]
    envelope = {"claim_id": claim_id, **envelope}
    if decide is not None:
        envelope["decide"] = decide
    if signing_key is None:
        return envelope
    return signed(envelope, signing_key, mapping.signing.kid if mapping.signing else None)


def _observed_at(mapping: ToolMapping, payload: Mapping[str, Any] | None, now: str) -> str:
    """The result's own observation time when the mapping names one and it is there."""
    if mapping.observed_at is not None and payload is not None:
        at = payload.get(mapping.observed_at)
        if isinstance(at, str) and at:
            return at
    return now


async def call_tool_claim(
    session: Any,
    mappings: ToolMappings,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    now: str,
    signing_key: bytes | None = None,
    decide: Decide | None = None,
    **ids: str | None,
) -> dict[str, Any]:
    """Call `tool` on an `mcp.ClientSession` and map its result to a claim (`decide` as above)."""
    mapping = mappings.tools.get(tool)
    if mapping is None:
        raise MappingError(f"no mapping for tool {tool!r} (mapped: {', '.join(mappings.tools)})")
    result = await session.call_tool(tool, dict(arguments))
    return claim_from_result(
        result,
        tool,
        mapping,
        arguments=arguments,
        now=now,
        signing_key=signing_key,
        decide=decide,
        claim_id=ids.get("claim_id"),
        agent_id=ids.get("agent_id"),
        trace_id=ids.get("trace_id"),
    )
