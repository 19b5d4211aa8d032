"""Versioned documents on the real broker: compare-and-set in the worker, merge in the client."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.client.docs_client import DocsClient
from claimwatch.wire.topics import partition_for

from tests.support.kafka import (
    TopicReader,
    WorkerProcess,
    Workers,
    publish_raw,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

POLICY = "policy_version: docs-kafka\n"
PATH = "team/plans/q3.md"

#: Three sections, each separated from the next by unchanged lines, so edits stay disjoint.
BASE = """\
# Plan
## Intro
intro: draft
context line 1
context line 2
## Budget
budget: draft
context line 3
context line 4
## Risks
risks: draft
the end
"""


def edit(body: str, old: str, new: str) -> str:
    """`body` with its one line `old` replaced by `new`."""
    assert 1 == body.count(old + "\n")
    return body.replace(old + "\n", new + "\n")


async def page(worker: WorkerProcess, suffix: str) -> tuple[int, Any]:
    """(status, JSON) of a /docs page of the worker."""
    status, raw = await worker.get(suffix)
    return status, orjson.loads(raw)


async def start(workers: Workers, tmp_path: Path) -> WorkerProcess:
    """A healthy worker with a fresh topic prefix."""
    return await workers.launch(write_policy(tmp_path, POLICY))


def client(worker: WorkerProcess, bootstrap: str) -> DocsClient:
    """A client of the worker's topics and pages."""
    return DocsClient(bootstrap, worker.prefix, worker.url, timeout=60.0)


async def test_three_writers_on_different_sections_all_merge(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Three concurrent writers from version 1 all succeed; the final version has every edit."""
    worker = await start(workers, tmp_path)
    async with client(worker, kafka_bootstrap) as docs:
        assert "ok" == (await docs.publish(PATH, BASE, 0))["status"]
        edits = [
            edit(BASE, "intro: draft", "intro: final"),
            edit(BASE, "budget: draft", "budget: 12k"),
            edit(BASE, "risks: draft", "risks: vendor lock-in"),
        ]
        results = await asyncio.gather(*(docs.publish(PATH, e, 1, "merge") for e in edits))
    assert ["ok", "ok", "ok"] == [r["status"] for r in results]
    assert [2, 3, 4] == sorted(r["version"] for r in results)
    merged = [r for r in results if r.get("merged")]
    assert 2 <= len(merged)
    assert all(1 == r["base_version"] and r["their_version"] >= 2 for r in merged)
    status, latest = await page(worker, f"/docs/{PATH}")
    expected = edit(
        edit(edit(BASE, "intro: draft", "intro: final"), "budget: draft", "budget: 12k"),
        "risks: draft",
        "risks: vendor lock-in",
    )
    assert (200, 4, expected) == (status, latest["version"], latest["body"])
    assert hashlib.sha256(expected.encode()).hexdigest() == latest["content_hash"]


async def test_two_writers_on_the_same_line_one_wins_one_gets_markers(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """Same-line edits: one ok, one conflict with git-style markers; nothing lost silently."""
    worker = await start(workers, tmp_path)
    async with client(worker, kafka_bootstrap) as docs:
        await docs.publish(PATH, BASE, 0)
        mine = edit(BASE, "budget: draft", "budget: 10k")
        yours = edit(BASE, "budget: draft", "budget: 20k")
        results = await asyncio.gather(
            docs.publish(PATH, mine, 1, "merge"), docs.publish(PATH, yours, 1, "merge")
        )
    by_status = {r["status"]: r for r in results}
    assert {"ok", "conflict"} == set(by_status)
    won, lost = by_status["ok"], by_status["conflict"]
    assert (2, False, 2) == (won["version"], lost["mergeable"], lost["version"])
    marked = lost["body"]
    assert "<<<<<<< ours\n" in marked and "=======\n" in marked and ">>>>>>> theirs\n" in marked
    assert "budget: 10k\n" in marked and "budget: 20k\n" in marked
    status, latest = await page(worker, f"/docs/{PATH}")
    assert (200, 2) == (status, latest["version"])
    assert latest["body"] in (mine, yours)
    winner, loser = ("10k", "20k") if latest["body"] == mine else ("20k", "10k")
    ours = marked.split("<<<<<<< ours\n")[1].split("=======\n")[0]
    theirs = marked.split("=======\n")[1].split(">>>>>>> theirs\n")[0]
    assert (f"budget: {loser}\n", f"budget: {winner}\n") == (ours, theirs)


async def test_fail_returns_the_conflict_with_the_current_version(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """on_conflict='fail' (the default) returns the store's conflict with the current version."""
    worker = await start(workers, tmp_path)
    async with client(worker, kafka_bootstrap) as docs:
        await docs.publish(PATH, BASE, 0)
        second = edit(BASE, "intro: draft", "intro: v2")
        assert 2 == (await docs.publish(PATH, second, 1))["version"]
        result = await docs.publish(PATH, edit(BASE, "risks: draft", "risks: none"), 1)
    assert ("conflict", 2, 1) == (result["status"], result["version"], result["expected_version"])
    assert hashlib.sha256(second.encode()).hexdigest() == result["content_hash"]
    assert "merged" not in result and "body" not in result
    _, latest = await page(worker, f"/docs/{PATH}")
    assert second == latest["body"]


async def test_appends_always_apply(workers: Workers, kafka_bootstrap: str, tmp_path: Path) -> None:
    """Concurrent appends all apply, to a new document too, whatever version they started from."""
    worker = await start(workers, tmp_path)
    lines = [f"entry {n}\n" for n in range(5)]
    async with client(worker, kafka_bootstrap) as docs:
        results = await asyncio.gather(*(docs.append("logs/journal", line) for line in lines))
    assert ["ok"] * 5 == [r["status"] for r in results]
    assert [1, 2, 3, 4, 5] == sorted(r["version"] for r in results)
    _, latest = await page(worker, "/docs/logs/journal")
    assert sorted(lines) == sorted(latest["body"].splitlines(keepends=True))


async def test_malformed_request_goes_to_the_dlq_and_the_next_one_applies(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """A request without a path is dead-lettered with its bytes; a valid one after it applies."""
    worker = await start(workers, tmp_path)
    bad = orjson.dumps({"body": "x", "expected_version": 0, "op": "publish"})
    await publish_raw(kafka_bootstrap, worker.names.publish, [(PATH.encode(), bad), (None, b"{")])
    async with client(worker, kafka_bootstrap) as docs:
        result = await docs.publish(PATH, BASE, 0)
    assert ("ok", 1) == (result["status"], result["version"])
    async with TopicReader(kafka_bootstrap, worker.names.dlq) as reader:
        records = await reader.wait_for(lambda rs: len(rs) >= 2, 60.0, "two dead letters")
    assert {bad, b"{"} == {r.value for r in records}
    reasons = {r.value: r.headers["claimwatch.reason"].decode() for r in records}
    assert reasons[bad].startswith("path: missing")
    assert reasons[b"{"].startswith("not JSON")
    assert {worker.names.publish.encode()} == {r.headers["claimwatch.topic"] for r in records}


async def test_versioned_page_returns_the_first_version_after_later_ones(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """GET /docs/{path}/v/1 keeps answering version 1; unknown versions and paths are 404."""
    worker = await start(workers, tmp_path)
    async with client(worker, kafka_bootstrap) as docs:
        for n in range(3):
            await docs.publish(PATH, f"body {n}\n", n)
    status, first = await page(worker, f"/docs/{PATH}/v/1")
    assert (200, 1, "body 0\n") == (status, first["version"], first["body"])
    assert PATH == first["path"]
    status, latest = await page(worker, f"/docs/{PATH}")
    assert (200, 3, "body 2\n") == (status, latest["version"], latest["body"])
    assert 404 == (await page(worker, f"/docs/{PATH}/v/4"))[0]
    assert 404 == (await page(worker, "/docs/team/plans/missing.md"))[0]


async def test_documents_survive_a_restart_and_any_worker_answers(
    workers: Workers, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """After SIGKILL and restart the history is back; a second worker forwards to the owner."""
    first = await start(workers, tmp_path)
    paths: dict[int, str] = {}
    n = 0
    while len(paths) < 4:  # one document per partition, so both workers own some
        paths.setdefault(partition_for(f"docs/{n}.md".encode(), 4), f"docs/{n}.md")
        n += 1
    async with client(first, kafka_bootstrap) as docs:
        for path in paths.values():
            await docs.publish(path, "one\n", 0)
            await docs.publish(path, "two\n", 1)
    await first.restart()
    async with client(first, kafka_bootstrap) as docs:
        results = [await docs.publish(p, "three\n", 2) for p in paths.values()]
        again = await docs.publish(paths[0], "stale\n", 2)
    assert [("ok", 3)] * 4 == [(r["status"], r["version"]) for r in results]
    assert ("conflict", 3) == (again["status"], again["version"])
    second = await workers.launch(
        write_policy(tmp_path, POLICY), prefix=first.prefix, app_id=first.app_id
    )
    expected = {(p, i): (200, "one\n", "three\n") for p in paths.values() for i in (0, 1)}

    async def answers() -> dict[tuple[str, int], tuple[int, str | None, str | None]]:
        seen = {}
        for path in paths.values():
            for index, worker in enumerate((first, second)):
                status, v1 = await worker.get(f"/docs/{path}/v/1")
                _, latest = await worker.get(f"/docs/{path}")
                if status != 200:
                    seen[(path, index)] = (status, None, None)
                    continue
                seen[(path, index)] = (
                    status,
                    orjson.loads(v1)["body"],
                    orjson.loads(latest).get("body"),
                )
        return seen

    deadline = time.monotonic() + 45.0
    seen = await answers()
    while seen != expected and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        seen = await answers()
    assert expected == seen
    owners: dict[str, list[int]] = {}
    for path in paths.values():
        for index, worker in enumerate((first, second)):
            status, _ = await worker.get(f"/docs/{path}", headers={"X-Claimwatch-Forwarded": "1"})
            if status == 200:
                owners.setdefault(path, []).append(index)
    assert set(paths.values()) == set(owners)
    assert all(1 == len(who) for who in owners.values())
    assert {0, 1} == {who[0] for who in owners.values()}
