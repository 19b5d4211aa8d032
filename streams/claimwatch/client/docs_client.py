"""Async client of the versioned document store: publish/append over Kafka, merge on conflict.

The store stays content-agnostic: merging happens here (docs/conflict-kinds.md#versioned-documents).
A request goes to
the `publish` topic keyed by path with a fresh request id; the client reads
`publish.results` (every partition, from the end as of start-up) and matches the id. With
``on_conflict="merge"`` a version conflict is answered by fetching the base (the expected
version) and the latest version from a worker's ``GET /docs`` pages, a three-way merge
(`claimwatch.core.merge`) and, when clean, a publish against the latest version.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal
from urllib.parse import quote

import aiohttp
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from claimwatch.core.docstore import RequestError, validate
from claimwatch.core.merge import merge
from claimwatch.wire import kafka
from claimwatch.wire.codec import dumps, loads
from claimwatch.wire.kafka import env_prefix
from claimwatch.wire.topics import TopicNames, require_topics

#: Merged publishes tried, each after a fresh fetch of the latest version, before
#: `contention`: another writer slipping in before each of them gives up
#: (docs/conflict-kinds.md#versioned-documents).
MAX_RETRIES: Final = 3
OnConflict = Literal["fail", "merge"]
Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Fetch = Callable[[str, int | None], Awaitable[dict[str, Any] | None]]


class DocsError(RuntimeError):
    """The store did not answer as it should (no result in time, a page that fails)."""


class DocsClient:
    """Publish and append documents; use as ``async with DocsClient(...) as docs:``."""

    def __init__(
        self,
        bootstrap: str | None = None,
        prefix: str | None = None,
        web_url: str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.names = TopicNames(prefix if prefix is not None else env_prefix())
        self.web_url = web_url.rstrip("/") if web_url else None
        self.timeout = timeout
        self.max_retries = max_retries
        self._bootstrap = bootstrap
        self._producer = kafka.producer(bootstrap)
        self._consumer = kafka.consumer(bootstrap, isolation_level="read_uncommitted")
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> DocsClient:
        """Start; `MissingTopic` (nothing is created) when the document topics are absent."""
        try:
            await require_topics(
                self._bootstrap, self.names.prefix, [self.names.publish, self.names.publish_results]
            )
        except BaseException:
            await self._consumer.stop()
            await self._producer.stop()
            raise
        await self._producer.start()
        try:
            await self._consumer.start()
            await self._listen()
        except BaseException:
            await self._consumer.stop()
            await self._producer.stop()
            raise
        self._reader = asyncio.create_task(self._read_results())
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10.0))
        return self

    async def _listen(self) -> None:
        """Assign every results partition at its current end (before any request is sent)."""
        topic = self.names.publish_results
        deadline = time.monotonic() + self.timeout
        partitions: set[int] = set()
        while not partitions:
            try:
                partitions = set(await self._producer.partitions_for(topic))
            except KafkaError as exc:
                if time.monotonic() > deadline:
                    raise DocsError(f"topic {topic} is unavailable ({exc!r}): no worker?") from exc
                await asyncio.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        self._consumer.assign(tps)
        await self._consumer.seek_to_end(*tps)
        for tp in tps:  # pin the end now, so no result of a request sent later is skipped
            await self._consumer.position(tp)

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._http is not None:
            await self._http.close()
        await self._consumer.stop()
        await self._producer.stop()

    # ------------------------------------------------------------------ requests

    async def publish(
        self, path: str, body: str, expected_version: int, on_conflict: OnConflict = "fail"
    ) -> dict[str, Any]:
        """Publish `body` as the version after `expected_version` (0: a new document).

        Returns the store's result (`status` ok or conflict; rejected or error with a
        `reason`: a body past the size limit, a request the worker failed on). With
        ``on_conflict="merge"`` a conflict is merged with the latest version: clean ->
        republished (``merged: true``, ``base_version``, ``their_version``); overlapping ->
        ``status: conflict``, ``mergeable: false`` and the body with git-style markers,
        nothing published; another writer slipping in before each of `max_retries` merged
        publishes -> ``reason: contention``.
        """
        if on_conflict not in ("fail", "merge"):
            raise ValueError(f"on_conflict: {on_conflict!r} is not one of fail, merge")
        if on_conflict == "merge" and self.web_url is None:
            raise ValueError("on_conflict='merge' needs web_url (a worker's HTTP address)")
        request = {"path": path, "body": body, "expected_version": expected_version}
        result = await self.send({**request, "op": "publish"})
        if result["status"] != "conflict" or on_conflict == "fail":
            return result  # ok, a conflict to report, or rejected/error (with a reason)
        return await merge_and_publish(
            self.send, self.fetch, path, body, expected_version, result, self.max_retries
        )

    async def append(self, path: str, body: str) -> dict[str, Any]:
        """Append `body` to the current version (always applies; never merges)."""
        return await self.send({"path": path, "body": body, "op": "append"})

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request with a fresh request id and wait for its result."""
        rid = uuid.uuid4().hex
        request = {**request, "request_id": rid}
        try:
            validate(request)
        except RequestError as exc:
            raise ValueError(str(exc)) from None
        if self._reader is None:
            raise DocsError("DocsClient used outside `async with`")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            await self._producer.send_and_wait(
                self.names.publish, dumps(request), key=str(request["path"]).encode()
            )
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            raise DocsError(
                f"no result for request {rid} ({request['path']}) on "
                f"{self.names.publish_results} within {self.timeout:.0f}s: is a worker running?"
            ) from None
        finally:
            self._waiting.pop(rid, None)

    async def _read_results(self) -> None:
        """Resolve the waiting requests from the results topic."""
        try:
            while True:
                batches = await self._consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    for record in records:
                        if record.value is None:
                            continue
                        try:
                            result = loads(record.value)
                        except ValueError:
                            continue
                        future = self._waiting.get(str(result.get("request_id")))
                        if future is not None and not future.done():
                            future.set_result(result)
        except Exception as exc:  # handed to every waiting request, then re-raised
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(DocsError(f"reading results failed: {exc!r}"))
            raise

    async def fetch(self, path: str, version: int | None = None) -> dict[str, Any] | None:
        """A worker's ``GET /docs/{path}[/v/{n}]`` page; 503s are waited out.

        None for 404, and for 410 (a version dropped beyond the versions a document keeps).
        """
        if self.web_url is None or self._http is None:
            raise DocsError("fetching documents needs web_url and `async with`")
        url = f"{self.web_url}/docs/{quote(path, safe='/')}"
        if version is not None:
            url += f"/v/{version}"
        deadline = time.monotonic() + self.timeout
        problem = ""
        while time.monotonic() < deadline:
            try:
                async with self._http.get(url) as response:
                    if response.status in (404, 410):
                        return None
                    if response.status == 200:
                        page: dict[str, Any] = await response.json()
                        return page
                    problem = f"HTTP {response.status}: {await response.text()}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                problem = repr(exc)
            await asyncio.sleep(0.2)
        raise DocsError(f"GET {url} failed for {self.timeout:.0f}s: {problem}")


async def merge_and_publish(
    send: Send,
    fetch: Fetch,
    path: str,
    ours: str,
    expected: int,
    conflict: dict[str, Any],
    max_retries: int = MAX_RETRIES,
) -> dict[str, Any]:
    """The merge loop after `conflict`: fetch base and latest, diff3, republish, retry.

    `send` sends one request and returns its result; `fetch` returns a document page (the
    latest when the version is None) or None. The loop always merges against the latest
    version at fetch time and makes at most `max_retries` merged publishes: a success after
    k of them lost to another writer reports ``retries: k``; when every one lost, it gives
    up with ``reason: contention, retries: max_retries`` and nothing of ours is published.
    """
    base_body = ""
    if expected > 0:
        base = await fetch(path, expected)
        if base is None:
            return {**conflict, "mergeable": False, "reason": "base_missing"}
        base_body = str(base["body"])
    last = conflict
    for attempt in range(max_retries):
        latest = await fetch(path, None)
        if latest is None:
            raise DocsError(f"{path}: the store reported a conflict but has no document")
        theirs = int(latest["version"])
        merged = merge(base_body, ours, str(latest["body"]))
        if not merged.clean:
            return {
                "status": "conflict",
                "path": path,
                "mergeable": False,
                "version": theirs,
                "expected_version": expected,
                "content_hash": latest["content_hash"],
                "conflicts": merged.conflicts,
                "body": merged.text,
            }
        result = await send(
            {"path": path, "body": merged.text, "expected_version": theirs, "op": "publish"}
        )
        if result["status"] == "ok":
            return {
                **result,
                "merged": True,
                "base_version": expected,
                "their_version": theirs,
                "retries": attempt,
            }
        if result["status"] != "conflict":
            return result  # rejected (e.g. the merged body past the limit) or error
        last = result
    return {
        "status": "conflict",
        "path": path,
        "mergeable": False,
        "reason": "contention",
        "retries": max_retries,
        "version": last["version"],
        "expected_version": expected,
        "content_hash": last.get("content_hash"),
    }
