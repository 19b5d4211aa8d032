"""Document stores the tests share: the pure store in memory, and clients that race writers.

`Store` holds documents behind the pure `claimwatch.core.docstore.apply`, with a hook run
before each request the client sends (another writer slipping in). `StoreDocsClient` is the
real `DocsClient` (its publish and merge loop) with `send` and `fetch` answered by a `Store`
instead of Kafka and a worker. `SlippingDocsClient` is the real client on a real broker
whose merged publishes are each preceded by one of a list of slips (a second writer's
publish, awaited before ours goes out).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from claimwatch.client.docs_client import DocsClient, OnConflict
from claimwatch.core.docstore import DocState, apply, content_hash

PATH = "notes/plan.md"


class Store:
    """Documents behind the pure `apply`, with a hook run before each request is applied."""

    def __init__(self) -> None:
        self.states: dict[str, DocState] = {}
        self.sent = 0
        self.before_send: Callable[[], None] = lambda: None

    @property
    def state(self) -> DocState:
        """The state of `PATH` (the one document most tests use)."""
        return self.states.get(PATH, DocState(PATH))

    def put(self, request: dict[str, Any]) -> dict[str, Any]:
        """Apply one request directly (another writer)."""
        self.sent += 1
        path = str(request["path"])
        state = self.states.get(path, DocState(path))
        rid = str(request.get("request_id") or f"direct-{self.sent}")
        self.states[path], response = apply(state, request, rid)
        return response

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        """The client's send: the hook first (a writer slipping in), then the request."""
        self.before_send()
        return self.put(request)

    async def fetch(self, path: str, version: int | None) -> dict[str, Any] | None:
        """The GET /docs pages."""
        state = self.states.get(path, DocState(path))
        found = state.current if version is None else state.at(version)
        if found is None:
            return None
        return {
            "path": path,
            "version": found.number,
            "body": found.body,
            "content_hash": content_hash(found.body),
        }


class StoreDocsClient(DocsClient):
    """The real client whose requests and pages are answered by a `Store` (no Kafka)."""

    def __init__(
        self,
        store: Store,
        bootstrap: str | None = None,
        prefix: str | None = None,
        web_url: str | None = "http://127.0.0.1:1",
        *,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(bootstrap, prefix, web_url, timeout=timeout)
        self.store = store
        self.entered = 0
        self.exited = 0

    async def __aenter__(self) -> StoreDocsClient:
        self.entered += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.exited += 1

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self.store.send({**request, "request_id": uuid.uuid4().hex})

    async def fetch(self, path: str, version: int | None = None) -> dict[str, Any] | None:
        return await self.store.fetch(path, version)


Slip = Callable[[], Awaitable[None]]


class SlippingDocsClient(DocsClient):
    """The real client, with `slips` awaited before its merged publishes (one each, in order).

    The first publish request of a `publish` call is the agent's own; every later one is a
    merged publish of `merge_and_publish`. Before each of those, the next slip (if any) runs:
    typically another real client publishing a disjoint edit, so our merged publish loses.
    """

    def __init__(self, *args: Any, slips: list[Slip], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slips = slips
        self.merged_publishes = 0
        self._publishes = 0

    async def publish(
        self, path: str, body: str, expected_version: int, on_conflict: OnConflict = "fail"
    ) -> dict[str, Any]:
        self._publishes = 0
        return await super().publish(path, body, expected_version, on_conflict)

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("op") == "publish":
            self._publishes += 1
            if self._publishes > 1:
                self.merged_publishes += 1
                if self.slips:
                    await self.slips.pop(0)()
        return await super().send(request)
