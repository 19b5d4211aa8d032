"""The client's merge loop against an in-memory store built on the pure document store."""

from __future__ import annotations

from typing import Any

from claimwatch.client.docs_client import merge_and_publish

from tests.support.doc_store import PATH, Store

BASE = "a: draft\nkeep 1\nkeep 2\nb: draft\nkeep 3\nkeep 4\nc: draft\n"


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


async def test_three_slips_report_contention() -> None:
    """Another writer slips in before each of the 3 merged publishes: contention, retries 3."""
    store, conflict = _store_at_v2()
    slips: list[int] = []

    def slip() -> None:
        slips.append(store.put({"path": PATH, "body": "x\n", "op": "append"})["version"])

    store.before_send = slip
    ours = BASE.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict, 3)
    assert ("conflict", "contention", 3, False) == (
        result["status"],
        result["reason"],
        result["retries"],
        result["mergeable"],
    )
    assert [3, 4, 5] == slips
    assert 5 == result["version"]
    assert all("c: ours" not in v.body for v in store.state.versions)


async def test_two_slips_then_success_reports_two_retries() -> None:
    """Two writers slip in, the third merged publish lands: ok, merged, retries 2."""
    store, conflict = _store_at_v2()
    slips = [
        lambda: store.put({"path": PATH, "body": "x\n", "op": "append"}),
        lambda: store.put({"path": PATH, "body": "y\n", "op": "append"}),
    ]
    store.before_send = lambda: slips.pop(0)() if slips else None
    ours = BASE.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict, 3)
    assert ("ok", True, 2, 4, 5) == (
        result["status"],
        result["merged"],
        result["retries"],
        result["their_version"],
        result["version"],
    )
    current = store.state.current
    assert current is not None
    assert current.body.endswith("c: ours\nx\ny\n")


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
