"""The client's merge loop against an in-memory store built on the pure document store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claimwatch.client.docs_client import merge_and_publish
from claimwatch.core.docstore import DocState, apply

PATH = "notes/plan.md"
BASE = "a: draft\nkeep 1\nkeep 2\nb: draft\nkeep 3\nkeep 4\nc: draft\n"


class Store:
    """One document behind the pure `apply`, with a hook run before each request is applied."""

    def __init__(self) -> None:
        self.state = DocState(PATH)
        self.sent = 0
        self.before_send: Callable[[], None] = lambda: None

    def put(self, request: dict[str, Any]) -> dict[str, Any]:
        """Apply one request directly (another writer)."""
        self.sent += 1
        self.state, response = apply(self.state, request, f"direct-{self.sent}")
        return response

    async def send(self, request: dict[str, Any]) -> dict[str, Any]:
        """The client's send: the hook first (a writer slipping in), then the request."""
        self.before_send()
        return self.put(request)

    async def fetch(self, path: str, version: int | None) -> dict[str, Any] | None:
        """The GET /docs pages."""
        found = self.state.current if version is None else self.state.at(version)
        if found is None:
            return None
        return {"path": path, "version": found.number, "body": found.body, "content_hash": "h"}


def _publish(body: str, expected: int) -> dict[str, Any]:
    return {"path": PATH, "body": body, "expected_version": expected, "op": "publish"}


def _store_at_v2() -> tuple[Store, dict[str, Any]]:
    """A store where v1 is BASE and v2 changed line a; plus our conflicting publish's result."""
    store = Store()
    store.put(_publish(BASE, 0))
    store.put(_publish(BASE.replace("a: draft", "a: theirs"), 1))
    conflict = store.put(_publish(BASE.replace("c: draft", "c: ours"), 1))
    return store, conflict


async def test_clean_merge_republishes_against_the_latest() -> None:
    """Disjoint edits: merged, published as v3, with the base and their version named."""
    store, conflict = _store_at_v2()
    ours = BASE.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    assert ("ok", 3, True, 1, 2, 0) == (
        result["status"],
        result["version"],
        result["merged"],
        result["base_version"],
        result["their_version"],
        result["retries"],
    )
    current = store.state.current
    assert current is not None
    assert BASE.replace("a: draft", "a: theirs").replace("c: draft", "c: ours") == current.body


async def test_overlap_publishes_nothing_and_returns_markers() -> None:
    """Same-line edits: conflict, not mergeable, marked body; the store is unchanged."""
    store, conflict = _store_at_v2()
    ours = BASE.replace("a: draft", "a: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    assert ("conflict", False, 2, 1) == (
        result["status"],
        result["mergeable"],
        result["version"],
        result["conflicts"],
    )
    assert "<<<<<<< ours\na: ours\n=======\na: theirs\n>>>>>>> theirs\n" in result["body"]
    assert 2 == store.state.version


async def test_success_on_the_second_try_after_a_writer_slipped_in() -> None:
    """A third writer lands between fetch and publish once: the loop re-merges and succeeds."""
    store, conflict = _store_at_v2()
    third = BASE.replace("a: draft", "a: theirs").replace("b: draft", "b: third")
    slips = [lambda: store.put(_publish(third, 2))]
    store.before_send = lambda: slips.pop()() if slips else None
    ours = BASE.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    assert ("ok", 4, 3, 1) == (
        result["status"],
        result["version"],
        result["their_version"],
        result["retries"],
    )
    current = store.state.current
    assert current is not None
    assert "a: theirs\n" in current.body and "b: third\n" in current.body
    assert "c: ours\n" in current.body


async def test_retry_exhaustion_reports_contention() -> None:
    """Another writer slips in before every merged publish: after 3 retries, contention."""
    store, conflict = _store_at_v2()

    def slip() -> None:
        store.put({"path": PATH, "body": "x\n", "op": "append"})

    store.before_send = slip
    ours = BASE.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict, 3)
    assert ("conflict", "contention", 3, False) == (
        result["status"],
        result["reason"],
        result["retries"],
        result["mergeable"],
    )
    assert 6 == result["version"]
    assert all("c: ours" not in v.body for v in store.state.versions)


async def test_missing_base_version_is_reported() -> None:
    """Expecting a version that never existed: the conflict comes back with base_missing."""
    store, _ = _store_at_v2()
    conflict = store.put(_publish("x", 7))
    result = await merge_and_publish(store.send, store.fetch, PATH, "x", 7, conflict)
    assert ("conflict", "base_missing", 2) == (
        result["status"],
        result["reason"],
        result["version"],
    )


async def test_expected_zero_merges_against_an_empty_base() -> None:
    """A create that lost the race merges against the empty document: both added text clashes."""
    store = Store()
    store.put(_publish("theirs\n", 0))
    conflict = store.put(_publish("ours\n", 0))
    result = await merge_and_publish(store.send, store.fetch, PATH, "ours\n", 0, conflict)
    assert ("conflict", False, 1) == (result["status"], result["mergeable"], result["version"])
