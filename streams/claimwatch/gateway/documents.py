"""The document tools `mark_fetch`, `mark_publish` and `mark_append` over the versioned store.

    mark_fetch(path, version?)                              a version of a document (latest)
    mark_publish(path, body, expected_version, on_conflict?) compare-and-set; `merge`: diff3
    mark_append(path, body)                                 add to the end (always applies)

The store, its pages and the merge loop are the worker's and `claimwatch.client.docs_client`'s;
this module adds the MCP layer: input schemas, argument checks, one long-lived `DocsClient`
(opened on the first document call, under a lock; an open that failed is not kept, so the
next call tries again) and the answers of `document_shapes`. A call never raises: bad
arguments and an unavailable store are error results saying what to do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from aiokafka.errors import KafkaError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from claimwatch.client.docs_client import DocsClient, DocsError
from claimwatch.client.facts import checked_worker_url
from claimwatch.core.docstore import MAX_PATH, RequestError, check_path
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.document_shapes import (
    Answer,
    OnConflict,
    append_answer,
    fetch_answer,
    publish_answer,
    unavailable_answer,
)
from claimwatch.gateway.opened import OpenedOnUse
from claimwatch.gateway.own_tools import ArgumentError, refuse_unknown
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.upstream import describe
from claimwatch.models.durations import US_PER_S, Duration
from claimwatch.wire.topics import BrokerUnavailable, MissingTopic

#: The longest one document request waits for the store, unless `documents.timeout` says.
DEFAULT_TIMEOUT_US: Final = 10 * US_PER_S
#: What makes a document call an "unavailable" error result rather than a failed tool.
UNAVAILABLE: Final = (DocsError, MissingTopic, BrokerUnavailable, KafkaError, OSError)

#: Makes the client: (bootstrap, prefix, web_url, *, timeout) like `DocsClient` itself.
ClientFactory = Callable[..., DocsClient]

_PATH: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PATH,
    "description": "the document's path, e.g. notes/plan.md (no leading or trailing '/')",
}
_BODY: Final = {"type": "string", "description": "the text"}
FETCH_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": _PATH,
        "version": {
            "type": "integer",
            "minimum": 1,
            "description": "a version number; without it, the latest version",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}
PUBLISH_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "path": _PATH,
        "body": {**_BODY, "description": "the whole new text of the document"},
        "expected_version": {
            "type": "integer",
            "minimum": 0,
            "description": "the version your edit is of (0: a new document)",
        },
        "on_conflict": {
            "type": "string",
            "enum": ["fail", "merge"],
            "default": "fail",
            "description": "when the document moved past expected_version: fail (report the "
            "conflict) or merge (three-way merge with the latest; overlaps publish nothing)",
        },
    },
    "required": ["path", "body", "expected_version"],
    "additionalProperties": False,
}
APPEND_SCHEMA: Final = {
    "type": "object",
    "properties": {"path": _PATH, "body": {**_BODY, "description": "the text to add at the end"}},
    "required": ["path", "body"],
    "additionalProperties": False,
}


class DocumentsSection(BaseModel):
    """The `documents:` section of the gateway file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: Duration = Field(
        default=DEFAULT_TIMEOUT_US, description="the longest one request waits for the store"
    )


class DocumentTools:
    """The tools over one long-lived document client, opened on first use."""

    def __init__(
        self,
        settings: GatewaySettings,
        timeout_s: float = DEFAULT_TIMEOUT_US / US_PER_S,
        *,
        client_factory: ClientFactory = DocsClient,
    ) -> None:
        self.settings = settings
        self.timeout_s = timeout_s
        self.web_url = checked_worker_url(settings.worker_url)
        self._client = OpenedOnUse(
            lambda: client_factory(
                settings.bootstrap, settings.topic_prefix, self.web_url, timeout=timeout_s
            )
        )

    def tools(self) -> Sequence[OwnTool]:
        """`mark_fetch`, `mark_publish`, `mark_append` as the gateway lists and routes them."""
        return [
            OwnTool(
                "mark_fetch",
                "Read a document of the shared versioned store: the latest version, or the "
                "version you name. Returns its text, version and content_hash; publish your "
                "edit with that version as expected_version.",
                FETCH_SCHEMA,
                self._answering(self.fetch, ("path", "version")),
            ),
            OwnTool(
                "mark_publish",
                "Publish the whole new text of a document as the version after "
                "expected_version (0 creates it). If someone published first: on_conflict "
                "fail (default) reports the conflict; merge three-way merges your edit with "
                "the latest version and publishes it when the edits do not overlap, else "
                "returns the text with conflict markers and publishes nothing.",
                PUBLISH_SCHEMA,
                self._answering(self.publish, ("path", "body", "expected_version", "on_conflict")),
            ),
            OwnTool(
                "mark_append",
                "Append text to the end of a document (created when absent). Always "
                "applies, whatever the version; use it for logs and journals.",
                APPEND_SCHEMA,
                self._answering(self.append, ("path", "body")),
            ),
        ]

    async def fetch(self, arguments: Mapping[str, Any]) -> Answer:
        path = _path(arguments)
        version = _integer(arguments, "version", 1, required=False)
        client = await self._connected()
        return fetch_answer(await client.fetch(path, version), path, version)

    async def publish(self, arguments: Mapping[str, Any]) -> Answer:
        path = _path(arguments)
        body = _text(arguments, "body")
        expected = _integer(arguments, "expected_version", 0, required=True)
        assert expected is not None
        on_conflict = _on_conflict(arguments)
        client = await self._connected()
        result = await client.publish(path, body, expected, on_conflict)
        return publish_answer(result, on_conflict)

    async def append(self, arguments: Mapping[str, Any]) -> Answer:
        path = _path(arguments)
        body = _text(arguments, "body")
        client = await self._connected()
        return append_answer(await client.append(path, body))

    async def _connected(self) -> DocsClient:
        """The one client, opened on first use (and again after an open that failed)."""
        return await self._client.get()

    async def aclose(self) -> None:
        """Close the client, when one was opened."""
        await self._client.close()

    def _answering(
        self,
        tool: Callable[[Mapping[str, Any]], Awaitable[Answer]],
        allowed: tuple[str, ...],
    ) -> Callable[[dict[str, Any]], Awaitable[CallToolResult]]:
        async def call(arguments: dict[str, Any]) -> CallToolResult:
            return await _answered(tool, allowed, arguments)

        return call


async def _answered(
    tool: Callable[[Mapping[str, Any]], Awaitable[Answer]],
    allowed: tuple[str, ...],
    arguments: Mapping[str, Any],
) -> CallToolResult:
    """The tool's answer as a result: bad arguments and an unavailable store as error results."""
    try:
        refuse_unknown(arguments, allowed)
        structured, is_error, text = await tool(arguments)
    except ArgumentError as exc:
        reason = f"invalid arguments: {exc}"
        return _result({"status": "error", "reason": reason}, True, reason)
    except UNAVAILABLE as exc:
        structured, is_error, text = unavailable_answer(describe(exc))
    return _result(structured, is_error, text)


def _result(structured: dict[str, Any], is_error: bool, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def _path(arguments: Mapping[str, Any]) -> str:
    try:
        return check_path(arguments.get("path"))
    except RequestError as exc:
        raise ArgumentError(str(exc)) from None


def _text(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ArgumentError(f"{name}: missing or not a string")
    return value


def _integer(arguments: Mapping[str, Any], name: str, least: int, *, required: bool) -> int | None:
    value = arguments.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        state = "missing or not" if value is None else "not"
        raise ArgumentError(f"{name}: {state} an integer >= {least}")
    return value


def _on_conflict(arguments: Mapping[str, Any]) -> OnConflict:
    value = arguments.get("on_conflict", "fail")
    if value == "fail":
        return "fail"
    if value == "merge":
        return "merge"
    raise ArgumentError(f"on_conflict: {value!r} is not one of fail, merge")


def build_documents(
    raw: Mapping[str, Any] | None, source: ConfigSource, settings: GatewaySettings
) -> DocumentTools | None:
    """None without a `documents:` section; else the tools (PolicyError on a bad section)."""
    if raw is None:
        return None
    try:
        section = DocumentsSection.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ("documents", *(str(part) for part in error["loc"]))
        reason = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise source.error(loc, f"{reason} (documents: takes `timeout`, e.g. 10s)") from None
    if section.timeout <= 0:
        raise source.error(("documents", "timeout"), "must be longer than 0s, e.g. 10s")
    try:
        return DocumentTools(settings, section.timeout / US_PER_S)
    except ValueError as exc:  # the worker URL, needed for the pages and merging
        raise source.error(("worker_url",), f"{exc} (the document tools read its pages)") from None
