"""The pure document store: compare-and-set, appends, idempotent request ids, validation."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from claimwatch.core.docstore import (
    MAX_BODY_BYTES,
    REMEMBERED_ANSWERS,
    DocLimits,
    DocState,
    RequestError,
    apply,
    validate,
)
from claimwatch.models.publish import PublishRequest, PublishResult
from pydantic import ValidationError


def _req(body: str, expected: int | None = 0, op: str = "publish", **extra: Any) -> dict[str, Any]:
    return {"path": "notes/a.md", "body": body, "expected_version": expected, "op": op, **extra}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_first_publish_creates_version_one() -> None:
    """Expected version 0 on a new document makes version 1 with the body's sha256."""
    state, response = apply(DocState("notes/a.md"), _req("hello\n"), "r1")
    expected = {
        "status": "ok",
        "path": "notes/a.md",
        "version": 1,
        "content_hash": _sha("hello\n"),
        "request_id": "r1",
    }
    assert expected == response
    assert [(1, "hello\n")] == [(v.number, v.body) for v in state.versions]


def test_stale_expected_version_is_a_conflict_with_the_current_version() -> None:
    """A publish against an old version changes nothing and reports the current one."""
    state, _ = apply(DocState("notes/a.md"), _req("one"), "r1")
    state, _ = apply(state, _req("two", 1), "r2")
    after, response = apply(state, _req("three", 1), "r3")
    expected = {
        "status": "conflict",
        "path": "notes/a.md",
        "version": 2,
        "content_hash": _sha("two"),
        "expected_version": 1,
        "request_id": "r3",
    }
    assert expected == response
    assert state.versions == after.versions


def test_conflict_on_a_missing_document() -> None:
    """Expecting version 3 of a document that does not exist: conflict at version 0."""
    _, response = apply(DocState("notes/a.md"), _req("x", 3), "r1")
    assert ("conflict", 0, None) == (
        response["status"],
        response["version"],
        response["content_hash"],
    )


def test_every_version_is_kept_immutable() -> None:
    """Older versions stay readable and unchanged after later publishes."""
    state = DocState("notes/a.md")
    for n, body in enumerate(["a", "b", "c"]):
        state, _ = apply(state, _req(body, n), f"r{n}")
    first = state.at(1)
    assert first is not None
    assert ("a", _sha("a")) == (first.body, first.content_hash)
    assert (3, None, None) == (state.version, state.at(0), state.at(4))


def test_append_applies_to_the_current_version_whatever_is_expected() -> None:
    """Append concatenates to the current body and ignores expected_version."""
    state, _ = apply(DocState("notes/a.md"), _req("line 1\n"), "r1")
    state, response = apply(state, _req("line 2\n", 0, op="append"), "r2")
    assert ("ok", 2) == (response["status"], response["version"])
    assert "line 1\nline 2\n" == state.versions[-1].body
    state, response = apply(state, _req("line 3\n", None, op="append"), "r3")
    assert "line 1\nline 2\nline 3\n" == state.versions[-1].body


def test_append_to_a_new_document_creates_it() -> None:
    """An append on a missing document makes version 1 with the appended body."""
    state, response = apply(DocState("notes/a.md"), _req("x", None, op="append"), "r1")
    assert (1, "x") == (response["version"], state.versions[-1].body)


def test_repeated_request_id_returns_the_earlier_response() -> None:
    """A redelivered append does not append twice; the first response comes back."""
    state, _ = apply(DocState("notes/a.md"), _req("a"), "r1")
    state, first = apply(state, _req("b", op="append"), "r2")
    again, second = apply(state, _req("b", op="append"), "r2")
    assert first == second
    assert state is again
    assert "ab" == again.versions[-1].body


def test_repeated_conflict_returns_the_same_conflict() -> None:
    """A conflicted request redelivered after its expected version came to exist stays refused."""
    state, first = apply(DocState("notes/a.md"), _req("x", 1), "r1")
    state, _ = apply(state, _req("y", 0), "r2")
    after, second = apply(state, _req("x", 1), "r1")
    assert first == second
    assert 1 == after.version


def test_remembered_answers_are_bounded() -> None:
    """Only the most recent answers are kept, by request id, oldest first."""
    state = DocState("notes/a.md")
    for n in range(REMEMBERED_ANSWERS + 5):
        state, _ = apply(state, _req("x", 9), f"c{n}")
    assert REMEMBERED_ANSWERS == len(state.answers)
    assert "c5" == next(iter(state.answers))


def test_versions_beyond_the_bound_are_dropped_oldest_first() -> None:
    """With max_versions 3, five publishes keep versions 3..5; older ones are gone."""
    state, limits = DocState("notes/a.md"), DocLimits(max_versions=3)
    for n in range(5):
        state, _ = apply(state, _req(f"v{n + 1}", n), f"r{n}", limits)
    assert [3, 4, 5] == [v.number for v in state.versions]
    assert (None, "v3") == (state.at(2), getattr(state.at(3), "body", None))


def test_a_repeated_request_is_answered_from_the_index_without_the_history() -> None:
    """A state holding only the current version still answers a repeat as before."""
    state, first = apply(DocState("notes/a.md"), _req("a"), "r1")
    state, _ = apply(state, _req("b", 1), "r2")
    current_only = DocState(state.path, state.versions[-1:], state.answers)
    again, second = apply(current_only, _req("a"), "r1")
    assert (first, current_only) == (second, again)


def test_request_for_another_path_is_refused() -> None:
    """Applying a request to another document's state is a programming error."""
    with pytest.raises(ValueError, match="applied to"):
        apply(DocState("other"), _req("x"), "r1")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([], "not a JSON object"),
        ({"body": "x", "expected_version": 0}, "path: missing"),
        ({"path": "", "body": "x", "expected_version": 0}, "path: missing"),
        ({"path": "/a", "body": "x", "expected_version": 0}, "leading, trailing"),
        ({"path": "a//b", "body": "x", "expected_version": 0}, "doubled"),
        ({"path": "a\nb", "body": "x", "expected_version": 0}, "control characters"),
        ({"path": "a/v/3", "body": "x", "expected_version": 0}, "v/<number>"),
        ({"path": "v/3", "body": "x", "expected_version": 0}, "v/<number>"),
        ({"path": "a?b", "body": "x", "expected_version": 0}, "'?', '#' or '%'"),
        ({"path": "50%", "body": "x", "expected_version": 0}, "'?', '#' or '%'"),
        ({"path": "a" * 513, "body": "x", "expected_version": 0}, "longer than"),
        ({"path": "a", "body": 3, "expected_version": 0}, "body: missing or not a string"),
        ({"path": "a", "expected_version": 0}, "body: missing"),
        ({"path": "a", "body": "x", "expected_version": 0, "op": "put"}, "op: 'put'"),
        ({"path": "a", "body": "x"}, "expected_version: missing"),
        ({"path": "a", "body": "x", "expected_version": -1}, "expected_version"),
        ({"path": "a", "body": "x", "expected_version": "1"}, "expected_version"),
        ({"path": "a", "body": "x", "expected_version": True}, "expected_version"),
        ({"path": "a", "body": "x", "op": "append", "expected_version": "z"}, "expected_version"),
        ({"path": "a", "body": "x", "expected_version": 0, "request_id": ""}, "request_id"),
    ],
)
def test_invalid_requests_are_refused_with_a_reason(data: object, reason: str) -> None:
    """Each malformed request raises RequestError naming the key and the problem."""
    with pytest.raises(RequestError, match=reason.replace("(", r"\(")) as info:
        validate(data)
    assert reason in str(info.value)


def test_paths_with_slashes_and_v_segments_inside_are_accepted() -> None:
    """Slashes, a `v` segment not at the end, and non-ASCII characters are fine."""
    for path in ["a/b/c.md", "v/1/notes", "docs/v/draft", "notes/π.md"]:
        assert path == validate({"path": path, "body": "", "expected_version": 0}).path


@pytest.mark.parametrize(
    ("body", "size"),
    [
        ("é" * (MAX_BODY_BYTES // 2), MAX_BODY_BYTES + 2),
        ("\x01" * (MAX_BODY_BYTES // 6 + 1), (MAX_BODY_BYTES // 6 + 1) * 6 + 2),
    ],
)
def test_body_over_the_limit_is_rejected_with_the_limit(body: str, size: int) -> None:
    """A body whose stored JSON form passes the limit is answered `rejected`, nothing made."""
    before = DocState("notes/a.md")
    after, response = apply(before, _req(body), "r1")
    assert ("rejected", 0, ()) == (response["status"], response["version"], after.versions)
    assert f"would take {size} bytes stored, over the limit of {MAX_BODY_BYTES}" in str(
        response["reason"]
    )


def test_append_past_the_limit_is_rejected_and_at_the_limit_applies() -> None:
    """The stored size of a body is its JSON with quotes: at the limit ok, one past rejected."""
    state, _ = apply(DocState("notes/a.md"), _req("x" * (MAX_BODY_BYTES - 3)), "r1")
    state, response = apply(state, _req("yy", op="append"), "r2")
    assert "rejected" == response["status"]
    state, response = apply(state, _req("y", op="append"), "r4")
    assert (2, MAX_BODY_BYTES - 2) == (response["version"], len(state.versions[-1].body))


def test_results_match_the_published_schema_model() -> None:
    """Every response of the store is a valid PublishResult; requests a valid PublishRequest."""
    state = DocState("notes/a.md")
    responses = []
    cases = [
        (_req("a"), "r1"),
        (_req("b", 0), "r2"),
        (_req("c", op="append"), "r3"),
        (_req("d" * MAX_BODY_BYTES, op="append"), "r4"),
    ]
    for request, rid in cases:
        assert validate(request).path == PublishRequest.model_validate(request).path
        state, response = apply(state, request, rid)
        responses.append(PublishResult.model_validate(response).status)
    assert ["ok", "conflict", "ok", "rejected"] == responses


def test_schema_model_refuses_what_the_store_refuses() -> None:
    """A publish without expected_version or with a non-string body fails both validations."""
    for data in [{"path": "a", "body": "x"}, {"path": "a", "body": 3, "expected_version": 0}]:
        with pytest.raises(RequestError):
            validate(data)
        with pytest.raises(ValidationError):
            PublishRequest.model_validate(data)
