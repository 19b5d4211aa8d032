"""The document tools' answers, from the exact results the store and the merge loop return."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from claimwatch.client.docs_client import merge_and_publish
from claimwatch.core.docstore import DocLimits, DocState, apply, content_hash
from claimwatch.gateway.document_shapes import (
    Answer,
    append_answer,
    fetch_answer,
    publish_answer,
    unavailable_answer,
)

from tests.support.doc_store import PATH, Store

V1 = "a: draft\nkeep 1\nkeep 2\nb: draft\nkeep 3\nkeep 4\nc: draft\n"
THEIRS = V1.replace("a: draft", "a: theirs")


def _publish(body: str, expected: int) -> dict[str, Any]:
    return {"path": PATH, "body": body, "expected_version": expected, "op": "publish"}


def _at_v2() -> tuple[Store, dict[str, Any]]:
    """v1, v2 (line a changed) and the store's conflict for an edit of v1."""
    store = Store()
    store.put(_publish(V1, 0))
    store.put(_publish(THEIRS, 1))
    return store, store.put(_publish(V1.replace("c: draft", "c: ours"), 1))


async def _fetch_ok() -> Answer:
    store, _ = _at_v2()
    return fetch_answer(await store.fetch(PATH, None), PATH, None)


async def _fetch_missing() -> Answer:
    return fetch_answer(await Store().fetch(PATH, None), PATH, None)


async def _fetch_missing_version() -> Answer:
    store, _ = _at_v2()
    return fetch_answer(await store.fetch(PATH, 3), PATH, 3)


async def _published() -> Answer:
    return publish_answer(Store().put(_publish(V1, 0)), "fail")


async def _merged() -> Answer:
    store, conflict = _at_v2()
    ours = V1.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    return publish_answer(result, "merge")


async def _conflict_fail() -> Answer:
    _, conflict = _at_v2()
    return publish_answer(conflict, "fail")


async def _overlap() -> Answer:
    store, conflict = _at_v2()
    ours = V1.replace("a: draft", "a: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    return publish_answer(result, "merge")


async def _contention() -> Answer:
    store, conflict = _at_v2()

    def slip() -> None:
        store.put(_append("x\n"))

    store.before_send = slip
    ours = V1.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    return publish_answer(result, "merge")


async def _base_missing() -> Answer:
    store, _ = _at_v2()
    conflict = store.put(_publish("x", 7))
    result = await merge_and_publish(store.send, store.fetch, PATH, "x", 7, conflict)
    return publish_answer(result, "merge")


async def _rejected() -> Answer:
    _, result = apply(DocState(PATH), _publish("x" * 40, 0), "r1", DocLimits(max_body_bytes=10))
    return publish_answer(result, "fail")


async def _appended() -> Answer:
    store, _ = _at_v2()
    return append_answer(store.put(_append("one more\n")))


async def _unavailable() -> Answer:
    return unavailable_answer("topic t.publish does not exist")


def _append(body: str) -> dict[str, Any]:
    return {"path": PATH, "body": body, "op": "append"}


H1, H2 = content_hash(V1), content_hash(THEIRS)
MERGED = THEIRS.replace("c: draft", "c: ours")
MARKED = "<<<<<<< ours\na: ours\n=======\na: theirs\n>>>>>>> theirs\n"

#: (case, make the answer, structuredContent, isError, text) — section 4.3 of the design.
ROWS: list[tuple[str, Callable[[], Awaitable[Answer]], dict[str, Any], bool, str]] = [
    (
        "fetch ok",
        _fetch_ok,
        {"status": "ok", "path": PATH, "version": 2, "body": THEIRS, "content_hash": H2},
        False,
        f"{PATH} v2 (sha256 {H2[:12]}…)\n{THEIRS}",
    ),
    (
        "fetch, no such document",
        _fetch_missing,
        {"status": "not_found", "path": PATH},
        True,
        f"no document {PATH}",
    ),
    (
        "fetch, no such version",
        _fetch_missing_version,
        {"status": "not_found", "path": PATH, "version": 3},
        True,
        f"{PATH} has no version 3 (never made, or dropped)",
    ),
    (
        "publish ok",
        _published,
        {"status": "ok", "path": PATH, "version": 1, "merged": False, "content_hash": H1},
        False,
        f"published {PATH} v1",
    ),
    (
        "publish merged",
        _merged,
        {
            "status": "ok",
            "path": PATH,
            "version": 3,
            "merged": True,
            "base_version": 1,
            "their_version": 2,
            "retries": 0,
            "content_hash": content_hash(MERGED),
        },
        False,
        f"published {PATH} v3: your edit of v1 merged with v2",
    ),
    (
        "conflict, fail",
        _conflict_fail,
        {
            "status": "conflict",
            "path": PATH,
            "your_version": 1,
            "current_version": 2,
            "content_hash": H2,
        },
        True,
        f"conflict: {PATH} is at v2, your edit is of v1; nothing was published. "
        "Fetch v2 and publish again, or call with on_conflict: merge",
    ),
    (
        "conflict, overlap",
        _overlap,
        {
            "status": "conflict",
            "path": PATH,
            "your_version": 1,
            "current_version": 2,
            "mergeable": False,
            "conflicts": 1,
            "body": THEIRS.replace("a: theirs\n", MARKED),
            "content_hash": H2,
        },
        True,
        "conflict: your edit of v1 overlaps v2 in 1 place; nothing was published. Resolve "
        "the markers below and publish the result with expected_version 2:\n"
        + THEIRS.replace("a: theirs\n", MARKED),
    ),
    (
        "contention",
        _contention,
        {
            "status": "conflict",
            "path": PATH,
            "your_version": 1,
            "current_version": 5,
            "mergeable": False,
            "reason": "contention",
            "retries": 3,
            "content_hash": content_hash(THEIRS + "x\n" * 3),
        },
        True,
        "conflict: 3 merge retries lost to other writers (contention); nothing was "
        "published. Fetch v5 and try again",
    ),
    (
        "base dropped",
        _base_missing,
        {
            "status": "conflict",
            "path": PATH,
            "your_version": 7,
            "current_version": 2,
            "mergeable": False,
            "reason": "base_missing",
        },
        True,
        f"conflict: {PATH} is at v2, and v7 is no longer kept, so your edit cannot be "
        "merged; nothing was published. Fetch the latest and publish again",
    ),
    (
        "rejected (size)",
        _rejected,
        {
            "status": "rejected",
            "path": PATH,
            "version": 0,
            "reason": "body: the version would take 42 bytes stored, over the limit of 10 "
            "(CLAIMWATCH_DOC_MAX_BODY_BYTES)",
        },
        True,
        "body: the version would take 42 bytes stored, over the limit of 10 "
        "(CLAIMWATCH_DOC_MAX_BODY_BYTES)",
    ),
    (
        "append ok",
        _appended,
        {
            "status": "ok",
            "path": PATH,
            "version": 3,
            "content_hash": content_hash(THEIRS + "one more\n"),
        },
        False,
        f"appended to {PATH}: v3",
    ),
    (
        "store unavailable",
        _unavailable,
        {"status": "error", "reason": "topic t.publish does not exist"},
        True,
        "the document store is unavailable: topic t.publish does not exist",
    ),
]


@pytest.mark.parametrize(
    ("make", "structured", "is_error", "text"),
    [pytest.param(*row[1:], id=row[0]) for row in ROWS],
)
async def test_each_answer_has_the_shape_of_the_table(
    make: Callable[[], Awaitable[Answer]], structured: dict[str, Any], is_error: bool, text: str
) -> None:
    assert (structured, is_error, text) == await make()


async def test_a_merge_after_slips_names_its_retries() -> None:
    """Two writers slipped in before the merged publish landed: retries 2, in the text too."""
    store, conflict = _at_v2()
    slips = [lambda: store.put(_append("x\n")), lambda: store.put(_append("y\n"))]

    def slip() -> None:
        if slips:
            slips.pop(0)()

    store.before_send = slip
    ours = V1.replace("c: draft", "c: ours")
    result = await merge_and_publish(store.send, store.fetch, PATH, ours, 1, conflict)
    structured, is_error, text = publish_answer(result, "merge")
    assert (2, 4, 5, False) == (
        structured["retries"],
        structured["their_version"],
        structured["version"],
        is_error,
    )
    assert text.endswith("(after 2 retries: other writers came first)")


def test_the_workers_error_result_is_an_error_naming_its_reason() -> None:
    """A request the worker failed on (status error) is an error result with its reason."""
    result = {"status": "error", "path": PATH, "version": 0, "reason": "internal_error: boom"}
    assert (
        {"status": "error", "path": PATH, "reason": "internal_error: boom"},
        True,
        "the document store failed on this request: internal_error: boom",
    ) == append_answer(result)
