"""The document tools through the gateway, on the real broker with a worker as shipped.

The merge plan's cases as an agent sees them: disjoint edits merge, overlapping ones return
markers and publish nothing, a writer slipping in before a merged publish triggers a retry,
three slips report contention, and concurrent agents lose no content. The agents are the
SDK's clients of `claimwatch gateway --http` with `documents: {}` (several sessions to one
gateway); the slip tests run the gateway in process, with a client whose merged publishes
are each preceded by another real client's publish (`tests.support.doc_store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import pytest
from claimwatch.client.docs_client import DocsClient
from claimwatch.gateway.config import GatewaySettings
from claimwatch.gateway.documents import DocumentTools
from claimwatch.gateway.server import Gateway
from mcp import Client
from mcp.types import CallToolResult

from tests.support.doc_store import Slip, SlippingDocsClient
from tests.support.gateway import (
    free_port,
    gateway_command,
    running,
    stdio_server,
    text_of,
    upstream_command,
    wire,
    write_gateway,
)
from tests.support.kafka import WorkerProcess, Workers, unique, write_policy

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

#: Four sections, each line to edit kept apart from the next by unchanged lines (diff3 sees
#: edits of neighbouring lines as one overlapping change).
SECTIONS: Final = ("alpha", "beta", "gamma", "delta")
BASE: Final = "".join(f"## {s}\n{s}: draft\n{s} context 1\n{s} context 2\n" for s in SECTIONS)
#: The longest one document request may wait for the store (a loaded 2-core machine).
TIMEOUT_S: Final = 60.0


@pytest.fixture(scope="module")
async def worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[WorkerProcess]:
    """One worker as the README starts it for the module; each test has its own documents."""
    workdir = tmp_path_factory.mktemp("documents")
    factory = Workers(kafka_bootstrap, workdir, [])
    try:
        yield await factory.launch(write_policy(workdir, "policy_version: documents-kafka\n"))
    finally:
        factory.stop_all()


def edit(body: str, section: str, new: str) -> str:
    """`body` with the line `<section>: ...` replaced by `<section>: <new>`."""
    lines = body.splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith(f"{section}: "))
    lines[index] = f"{section}: {new}\n"
    return "".join(lines)


def line_of(body: str, section: str) -> str:
    return next(line for line in body.splitlines() if line.startswith(f"{section}: "))


def answer(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, wire(result)
    return dict(result.structured_content)


def gateway_file(path: Path, worker: WorkerProcess, prefix: str | None = None) -> Path:
    """A gateway with the document tools on `worker`'s topics (or on `prefix`'s)."""
    return write_gateway(
        path,
        {"alpha": stdio_server(upstream_command("alpha"))},
        worker_url=worker.url,
        bootstrap=worker.bootstrap,
        topic_prefix=prefix if prefix is not None else worker.prefix,
        documents={"timeout": f"{TIMEOUT_S:g}s"},
    )


@contextlib.asynccontextmanager
async def http_gateway(config: Path) -> AsyncIterator[str]:
    """`claimwatch gateway --http` of `config`; yields its MCP URL."""
    port = free_port()
    with running(gateway_command(config, "--http", f"127.0.0.1:{port}"), port):
        yield f"http://127.0.0.1:{port}/mcp"


async def fetch(client: Client, path: str) -> dict[str, Any]:
    result = await client.call_tool("mark_fetch", {"path": path})
    assert not result.is_error, text_of(result)
    return answer(result)


async def publish(
    client: Client, path: str, body: str, expected: int, on_conflict: str | None = None
) -> CallToolResult:
    arguments: dict[str, Any] = {"path": path, "body": body, "expected_version": expected}
    if on_conflict is not None:
        arguments["on_conflict"] = on_conflict
    return await client.call_tool("mark_publish", arguments)


async def test_disjoint_edits_merge_clean_through_mark_publish(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    path = f"{unique('plans')}/q3.md"
    async with (
        http_gateway(gateway_file(tmp_path / "gateway.yaml", worker)) as url,
        Client(url, cache=None) as a,
        Client(url, cache=None) as b,
    ):
        created = await publish(a, path, BASE, 0)
        assert not created.is_error, text_of(created)
        seen_a, seen_b = await fetch(a, path), await fetch(b, path)
        first = await publish(a, path, edit(seen_a["body"], "alpha", "by A"), 1)
        second = await publish(b, path, edit(seen_b["body"], "gamma", "by B"), 1, "merge")
        final = await fetch(b, path)
    assert {"status": "ok", "version": 2, "merged": False} == {
        k: answer(first)[k] for k in ("status", "version", "merged")
    }
    merged = answer(second)
    assert (False, "ok", True, 1, 2, 3, 0) == (
        second.is_error,
        merged["status"],
        merged["merged"],
        merged["base_version"],
        merged["their_version"],
        merged["version"],
        merged["retries"],
    )
    assert (3, edit(edit(BASE, "alpha", "by A"), "gamma", "by B")) == (
        final["version"],
        final["body"],
    )
    assert merged["content_hash"] == final["content_hash"]


async def test_overlapping_edits_return_markers_and_publish_nothing(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    path = f"{unique('plans')}/q3.md"
    async with (
        http_gateway(gateway_file(tmp_path / "gateway.yaml", worker)) as url,
        Client(url, cache=None) as a,
        Client(url, cache=None) as b,
    ):
        await publish(a, path, BASE, 0)
        first = await publish(a, path, edit(BASE, "beta", "by A"), 1)
        second = await publish(b, path, edit(BASE, "beta", "by B"), 1, "merge")
        final = await fetch(b, path)
    assert not first.is_error, text_of(first)
    conflict = answer(second)
    assert (True, "conflict", False, 1, 1, 2) == (
        second.is_error,
        conflict["status"],
        conflict["mergeable"],
        conflict["conflicts"],
        conflict["your_version"],
        conflict["current_version"],
    )
    assert "<<<<<<< ours\nbeta: by B\n=======\nbeta: by A\n>>>>>>> theirs\n" in conflict["body"]
    assert conflict["body"] in text_of(second)
    assert (2, edit(BASE, "beta", "by A")) == (final["version"], final["body"])


async def test_fail_is_the_default_and_returns_the_conflict(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    path = f"{unique('plans')}/q3.md"
    async with (
        http_gateway(gateway_file(tmp_path / "gateway.yaml", worker)) as url,
        Client(url, cache=None) as a,
        Client(url, cache=None) as b,
    ):
        await publish(a, path, BASE, 0)
        await publish(a, path, edit(BASE, "alpha", "by A"), 1)
        stale = await publish(b, path, edit(BASE, "delta", "by B"), 1)
        final = await fetch(b, path)
    conflict = answer(stale)
    assert (True, "conflict", 1, 2) == (
        stale.is_error,
        conflict["status"],
        conflict["your_version"],
        conflict["current_version"],
    )
    assert "mergeable" not in conflict
    assert "or call with on_conflict: merge" in text_of(stale)
    assert (2, edit(BASE, "alpha", "by A")) == (final["version"], final["body"])


def slipping_gateway(worker: WorkerProcess, slips: list[Slip]) -> tuple[Gateway, DocumentTools]:
    """A gateway in process whose document client lets `slips` run before merged publishes."""
    settings = GatewaySettings(worker.url, worker.bootstrap, worker.prefix)
    factory = functools.partial(SlippingDocsClient, slips=slips)
    documents = DocumentTools(settings, TIMEOUT_S, client_factory=factory)
    return Gateway({}, own_tools=documents.tools()), documents


def other_writer(docs: DocsClient, path: str, section: str, text: str) -> Slip:
    """A slip: another real client publishes its edit of `section` on the latest version."""

    async def slip() -> None:
        latest = await docs.fetch(path)
        assert latest is not None
        done = await docs.publish(path, edit(latest["body"], section, text), latest["version"])
        assert "ok" == done["status"], done

    return slip


async def test_a_third_writer_slipping_in_triggers_the_retry(worker: WorkerProcess) -> None:
    path = f"{unique('plans')}/q3.md"
    async with DocsClient(worker.bootstrap, worker.prefix, worker.url, timeout=TIMEOUT_S) as other:
        await other.publish(path, BASE, 0)
        slips = [other_writer(other, path, "delta", "by C")]
        gateway, documents = slipping_gateway(worker, slips)
        try:
            async with gateway.serving(), Client(gateway.server) as agent:
                seen = await fetch(agent, path)
                await other.publish(path, edit(BASE, "beta", "by B"), 1)
                ours = await publish(agent, path, edit(seen["body"], "alpha", "by A"), 1, "merge")
                final = await fetch(agent, path)
        finally:
            await documents.aclose()
    merged = answer(ours)
    assert (False, True, 1, 1, 3, 4) == (
        ours.is_error,
        merged["merged"],
        merged["retries"],
        merged["base_version"],
        merged["their_version"],
        merged["version"],
    )
    assert [] == slips
    expected = edit(edit(edit(BASE, "alpha", "by A"), "beta", "by B"), "delta", "by C")
    assert (4, expected) == (final["version"], final["body"])


async def test_slips_before_every_merged_publish_report_contention(
    worker: WorkerProcess,
) -> None:
    """Three slips, one before each of the three merged publishes: contention, retries 3."""
    path = f"{unique('plans')}/q3.md"
    async with DocsClient(worker.bootstrap, worker.prefix, worker.url, timeout=TIMEOUT_S) as other:
        await other.publish(path, BASE, 0)
        slips = [other_writer(other, path, "delta", f"slip {n}") for n in (1, 2, 3)]
        gateway, documents = slipping_gateway(worker, slips)
        try:
            async with gateway.serving(), Client(gateway.server) as agent:
                await other.publish(path, edit(BASE, "beta", "by B"), 1)
                ours = await publish(agent, path, edit(BASE, "alpha", "by A"), 1, "merge")
                final = await fetch(agent, path)
            client = documents._client.current
            assert isinstance(client, SlippingDocsClient)
            merged_publishes = client.merged_publishes
            versions = [await other.fetch(path, n) for n in range(1, final["version"] + 1)]
        finally:
            await documents.aclose()
    conflict = answer(ours)
    assert (True, "conflict", "contention", 3, False, 1, 5) == (
        ours.is_error,
        conflict["status"],
        conflict["reason"],
        conflict["retries"],
        conflict["mergeable"],
        conflict["your_version"],
        conflict["current_version"],
    )
    assert (3, [], 5) == (merged_publishes, slips, final["version"])
    assert "delta: slip 3" == line_of(final["body"], "delta")
    assert all(v is not None and "alpha: by A" not in v["body"] for v in versions)


async def test_concurrent_agents_never_lose_content(worker: WorkerProcess, tmp_path: Path) -> None:
    """4 sessions, one section each, 3 rounds of fetch, edit, merge: all 12 edits are kept."""
    path = f"{unique('plans')}/team.md"
    outcomes: list[tuple[str, int, int]] = []  # (section, round, tries)

    async def author(url: str, section: str) -> None:
        async with Client(url, cache=None) as client:
            for round_ in range(1, 4):
                for tries in range(1, 11):
                    seen = await fetch(client, path)
                    mine = f"{line_of(seen['body'], section).split(': ', 1)[1]} r{round_}"
                    body = edit(seen["body"], section, mine)
                    result = await publish(client, path, body, seen["version"], "merge")
                    done = answer(result)
                    if done["status"] == "ok":
                        outcomes.append((section, round_, tries))
                        break
                    assert "contention" == done.get("reason"), wire(result)
                else:
                    raise AssertionError(f"{section} round {round_}: contention 10 times")

    async with http_gateway(gateway_file(tmp_path / "gateway.yaml", worker)) as url:
        async with Client(url, cache=None) as setup:
            created = await publish(setup, path, BASE, 0)
            assert not created.is_error, text_of(created)
        await asyncio.gather(*(author(url, s) for s in SECTIONS))
        async with Client(url, cache=None) as reader:
            final = await fetch(reader, path)
    assert 12 == len(outcomes)
    assert [f"{s}: draft r1 r2 r3" for s in SECTIONS] == [
        line_of(final["body"], s) for s in SECTIONS
    ]


async def test_concurrent_appends_all_apply(worker: WorkerProcess, tmp_path: Path) -> None:
    path = f"{unique('logs')}/journal"

    async def appender(url: str, name: str) -> list[int]:
        async with Client(url, cache=None) as client:
            versions = []
            for n in range(5):
                result = await client.call_tool(
                    "mark_append", {"path": path, "body": f"{name} {n}\n"}
                )
                assert not result.is_error, text_of(result)
                versions.append(answer(result)["version"])
            return versions

    async with http_gateway(gateway_file(tmp_path / "gateway.yaml", worker)) as url:
        async with Client(url, cache=None) as setup:
            await publish(setup, path, "journal\n", 0)
        versions = await asyncio.gather(*(appender(url, s) for s in SECTIONS))
        async with Client(url, cache=None) as reader:
            final = await fetch(reader, path)
    lines = final["body"].splitlines()
    assert (21, 21, "journal") == (final["version"], len(lines), lines[0])
    assert sorted(f"{s} {n}" for s in SECTIONS for n in range(5)) == sorted(lines[1:])
    assert list(range(2, 22)) == sorted(v for vs in versions for v in vs)


async def test_store_down_is_an_error_result(worker: WorkerProcess, tmp_path: Path) -> None:
    """A prefix without document topics: an error result naming the topic; the gateway lives."""
    prefix = unique("nodocs") + "."
    config = gateway_file(tmp_path / "gateway.yaml", worker, prefix)
    async with http_gateway(config) as url, Client(url, cache=None) as client:
        first = await client.call_tool("mark_fetch", {"path": "notes/plan.md"})
        second = await client.call_tool("mark_append", {"path": "notes/plan.md", "body": "x"})
        listed = [t.name for t in (await client.list_tools()).tools]
    for result in (first, second):
        error = answer(result)
        assert (True, "error") == (result.is_error, error["status"]), wire(result)
        assert f"{prefix}publish" in error["reason"], error
        assert text_of(result).startswith("the document store is unavailable: ")
    assert {"mark_fetch", "mark_publish", "mark_append"} <= set(listed)
