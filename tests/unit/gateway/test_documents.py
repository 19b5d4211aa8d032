"""The document tools over the real client and merge loop, answered by the in-memory store."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.config import GatewaySettings, parse_config
from claimwatch.gateway.documents import DocumentTools, build_documents
from claimwatch.gateway.routing import OwnTool
from claimwatch.policy.source import PolicyError
from claimwatch.wire.topics import MissingTopic
from mcp.types import CallToolResult

from tests.support.doc_store import PATH, Store, StoreDocsClient
from tests.support.gateway import text_of

SETTINGS = GatewaySettings("http://127.0.0.1:1", "127.0.0.1:1", "docs-unit.")
V1 = "a: draft\nb: draft\nc: draft\n"


class Factory:
    """Makes `StoreDocsClient`s over one store; the first `failures` opens raise."""

    def __init__(self, store: Store, failures: int = 0) -> None:
        self.store = store
        self.failures = failures
        self.made: list[StoreDocsClient] = []
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> StoreDocsClient:
        self.calls.append((*args, kwargs))
        client = StoreDocsClient(self.store, *args, **kwargs)
        if self.failures:
            self.failures -= 1

            async def refuse() -> StoreDocsClient:
                raise MissingTopic("topic docs-unit.publish does not exist")

            client.__aenter__ = refuse  # type: ignore[method-assign]
        self.made.append(client)
        return client


def _tools(store: Store | None = None, failures: int = 0) -> tuple[dict[str, OwnTool], Factory]:
    factory = Factory(store if store is not None else Store(), failures)
    tools = DocumentTools(SETTINGS, 3.0, client_factory=factory)
    return {t.name: t for t in tools.tools()}, factory


def _shape(result: CallToolResult) -> tuple[bool, dict[str, Any]]:
    return result.is_error, dict(result.structured_content or {})


def test_the_tools_and_their_schemas() -> None:
    tools, _ = _tools()
    assert ["mark_fetch", "mark_publish", "mark_append"] == list(tools)
    schemas = {name: tool.input_schema for name, tool in tools.items()}
    assert [["path"], ["path", "body", "expected_version"], ["path", "body"]] == [
        s["required"] for s in schemas.values()
    ]
    assert all(s["additionalProperties"] is False for s in schemas.values())
    on_conflict = schemas["mark_publish"]["properties"]["on_conflict"]
    assert (["fail", "merge"], "fail") == (on_conflict["enum"], on_conflict["default"])
    assert (1, 0) == (
        schemas["mark_fetch"]["properties"]["version"]["minimum"],
        schemas["mark_publish"]["properties"]["expected_version"]["minimum"],
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("mark_fetch", {"path": "/notes"}, "path: leading, trailing or doubled '/'"),
        ("mark_fetch", {}, "path: missing or not a non-empty string"),
        ("mark_fetch", {"path": "a", "version": 0}, "version: not an integer >= 1"),
        ("mark_fetch", {"path": "a", "version": True}, "version: not an integer >= 1"),
        ("mark_fetch", {"path": "a", "extra": 1}, "unknown argument(s): extra"),
        ("mark_publish", {"path": "a", "body": "x"}, "expected_version: missing or not an"),
        ("mark_publish", {"path": "a", "body": 3, "expected_version": 0}, "body: missing or"),
        ("mark_publish", {"path": "a", "body": "x", "expected_version": -1}, "expected_version"),
        (
            "mark_publish",
            {"path": "a", "body": "x", "expected_version": 0, "on_conflict": "maybe"},
            "on_conflict: 'maybe' is not one of fail, merge",
        ),
        ("mark_append", {"path": "a?b", "body": "x"}, "path: contains '?', '#' or '%'"),
        ("mark_append", {"path": "a"}, "body: missing or not a string"),
    ],
)
async def test_bad_arguments_are_error_results(
    tool: str, arguments: dict[str, Any], expected: str
) -> None:
    """Refused before the store is asked (no client is even opened)."""
    tools, factory = _tools()
    result = await tools[tool].call(arguments)
    assert result.is_error
    assert text_of(result).startswith(f"invalid arguments: {expected}"), text_of(result)
    assert "error" == (result.structured_content or {})["status"]
    assert [] == factory.made


async def test_publish_fetch_append_round_trip() -> None:
    tools, _ = _tools()
    published = await tools["mark_publish"].call({"path": PATH, "body": V1, "expected_version": 0})
    appended = await tools["mark_append"].call({"path": PATH, "body": "d: new\n"})
    fetched = await tools["mark_fetch"].call({"path": PATH})
    first = await tools["mark_fetch"].call({"path": PATH, "version": 1})
    assert (False, 1, False) == (
        published.is_error,
        _shape(published)[1]["version"],
        _shape(published)[1]["merged"],
    )
    assert (False, 2) == (appended.is_error, _shape(appended)[1]["version"])
    assert (V1 + "d: new\n", 2) == (_shape(fetched)[1]["body"], _shape(fetched)[1]["version"])
    assert V1 == _shape(first)[1]["body"]
    assert text_of(fetched).endswith(V1 + "d: new\n")


async def test_fail_is_the_default_on_conflict() -> None:
    """Without on_conflict a stale edit is reported, with both versions, and not published."""
    store = Store()
    tools, _ = _tools(store)
    await tools["mark_publish"].call({"path": PATH, "body": V1, "expected_version": 0})
    await tools["mark_publish"].call(
        {"path": PATH, "body": V1.replace("a: draft", "a: A"), "expected_version": 1}
    )
    stale = await tools["mark_publish"].call(
        {"path": PATH, "body": V1.replace("c: draft", "c: B"), "expected_version": 1}
    )
    is_error, structured = _shape(stale)
    assert (True, "conflict", 1, 2) == (
        is_error,
        structured["status"],
        structured["your_version"],
        structured["current_version"],
    )
    assert "mergeable" not in structured
    assert 2 == store.state.version


async def test_merge_publishes_the_disjoint_edit() -> None:
    store = Store()
    tools, _ = _tools(store)
    await tools["mark_publish"].call({"path": PATH, "body": V1, "expected_version": 0})
    await tools["mark_publish"].call(
        {"path": PATH, "body": V1.replace("a: draft", "a: A"), "expected_version": 1}
    )
    merged = await tools["mark_publish"].call(
        {
            "path": PATH,
            "body": V1.replace("c: draft", "c: B"),
            "expected_version": 1,
            "on_conflict": "merge",
        }
    )
    structured = _shape(merged)[1]
    assert (True, 1, 2, 3, 0) == (
        structured["merged"],
        structured["base_version"],
        structured["their_version"],
        structured["version"],
        structured["retries"],
    )
    current = store.state.current
    assert current is not None
    assert "a: A\nb: draft\nc: B\n" == current.body


async def test_the_client_is_opened_once_and_closed_with_the_tools() -> None:
    factory = Factory(Store())
    documents = DocumentTools(SETTINGS, 3.0, client_factory=factory)
    tools = {t.name: t for t in documents.tools()}
    for _ in range(3):
        await tools["mark_fetch"].call({"path": PATH})
    await documents.aclose()
    assert 1 == len(factory.made)
    client = factory.made[0]
    assert (1, 1) == (client.entered, client.exited)
    assert [(SETTINGS.bootstrap, SETTINGS.topic_prefix, "http://127.0.0.1:1")] == [
        call[:3] for call in factory.calls
    ]
    assert {"timeout": 3.0} == factory.calls[0][3]


async def test_a_failed_open_is_an_error_result_and_the_next_call_opens_again() -> None:
    tools, factory = _tools(failures=1)
    failed = await tools["mark_fetch"].call({"path": PATH})
    again = await tools["mark_fetch"].call({"path": PATH})
    assert (True, "error") == (failed.is_error, _shape(failed)[1]["status"])
    assert "the document store is unavailable: " in text_of(failed)
    assert "docs-unit.publish does not exist" in text_of(failed)
    assert (True, "not_found") == (again.is_error, _shape(again)[1]["status"])
    assert 2 == len(factory.made)


async def test_closing_without_a_call_opens_nothing() -> None:
    tools = DocumentTools(SETTINGS, 3.0, client_factory=Factory(Store()))
    await tools.aclose()


def _config(section: str) -> str:
    return f"servers:\n  a: {{command: [x]}}\n{section}"


@pytest.mark.parametrize(
    ("section", "timeout"),
    [("documents: {}\n", 10.0), ("documents:\n  timeout: 3s\n", 3.0)],
)
def test_a_documents_section_gives_the_tools(section: str, timeout: float) -> None:
    config = parse_config(_config(section), "g.yaml")
    tools = build_documents(config.documents_raw, config.source, SETTINGS)
    assert tools is not None
    assert timeout == tools.timeout_s


def test_no_documents_section_gives_no_tools() -> None:
    config = parse_config(_config(""), "g.yaml")
    assert build_documents(config.documents_raw, config.source, SETTINGS) is None


@pytest.mark.parametrize(
    ("section", "settings", "expected"),
    [
        ("documents:\n  timeout: 0s\n", SETTINGS, "g.yaml:4: documents.timeout: must be longer"),
        ("documents:\n  timeout: soon\n", SETTINGS, "g.yaml:4: documents.timeout: "),
        ("documents:\n  store: x\n", SETTINGS, "g.yaml:4: documents.store: unknown key"),
        (
            "documents: {}\n",
            GatewaySettings("ftp://worker", None, None),
            "g.yaml:1: worker_url: worker URL 'ftp://worker' has the scheme",
        ),
    ],
)
def test_a_bad_documents_section_names_file_line_and_key(
    section: str, settings: GatewaySettings, expected: str
) -> None:
    config = parse_config(_config(section), "g.yaml")
    with pytest.raises(PolicyError) as caught:
        build_documents(config.documents_raw, config.source, settings)
    assert str(caught.value).startswith(expected), str(caught.value)
