"""The `covering` and `wait` parameters, and whether a decision covers given claims."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.covering import (
    MAX_IDS,
    QueryError,
    covering_ids,
    covers,
    missing,
    wait_seconds,
)


def _decision(*ids: str, disposition: str = "won") -> dict[str, Any]:
    return {"claims": [{"claim_id": i, "disposition": disposition} for i in ids]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("c1", ("c1",)),
        ("c1,c2", ("c1", "c2")),
        (" c2 , c1 ,, c2 ", ("c2", "c1")),
    ],
)
def test_covering_ids_are_read_in_order_without_repeats(
    text: str | None, expected: tuple[str, ...] | None
) -> None:
    """Ids are split on commas, trimmed, kept in order, each once."""
    assert expected == covering_ids(text)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "`covering` lists no claim id (give one or more, comma-separated)"),
        (" , ,", "`covering` lists no claim id (give one or more, comma-separated)"),
        (
            ",".join(f"c{i}" for i in range(MAX_IDS + 1)),
            f"`covering` lists {MAX_IDS + 1} claim ids; at most {MAX_IDS} per request",
        ),
        ("c1,c\n2", "`covering`: 'c\\n2' is no claim id (printable, at most 256 chars)"),
        ("x" * 257, f"`covering`: {'x' * 40!r} is no claim id (printable, at most 256 chars)"),
    ],
)
def test_a_covering_without_ids_or_with_too_many_is_refused(text: str, error: str) -> None:
    """An empty or oversized `covering` is a clear error, not a wait for nothing."""
    with pytest.raises(QueryError) as caught:
        covering_ids(text)
    assert error == str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, 0.0), ("", 0.0), ("0", 0.0), ("2.5", 2.5), ("30", 30.0), ("600", 30.0)],
)
def test_wait_is_seconds_up_to_the_maximum(text: str | None, expected: float) -> None:
    """`wait` defaults to 0 and is cut to 30 seconds."""
    assert expected == wait_seconds(text)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("soon", "`wait` must be a number of seconds, got 'soon'"),
        ("-1", "`wait` must be between 0 and 30 seconds, got -1"),
        ("nan", "`wait` must be between 0 and 30 seconds, got nan"),
        ("inf", "`wait` must be between 0 and 30 seconds, got inf"),
    ],
)
def test_a_wait_that_is_no_duration_is_refused(text: str, error: str) -> None:
    """A `wait` that is not a finite, non-negative number says so."""
    with pytest.raises(QueryError) as caught:
        wait_seconds(text)
    assert error == str(caught.value)


@pytest.mark.parametrize(
    ("decision", "ids", "expected_missing", "expected_covers"),
    [
        (None, ("c1",), ["c1"], False),
        (None, (), [], False),
        (_decision("c1", "c2"), (), [], True),
        (_decision("c1", "c2"), ("c2",), [], True),
        (_decision("c1"), ("c2", "c1", "c3"), ["c2", "c3"], False),
        (_decision("c1", disposition="rejected"), ("c1",), [], True),
        (_decision("c1", disposition="stale"), ("c1",), [], True),
        ({"claims": None}, ("c1",), ["c1"], False),
    ],
)
def test_a_decision_covers_the_claims_it_lists_whatever_became_of_them(
    decision: dict[str, Any] | None,
    ids: tuple[str, ...],
    expected_missing: list[str],
    expected_covers: bool,
) -> None:
    """Covered means listed (rejected and stale claims too); no decision covers nothing."""
    assert expected_missing == missing(decision, ids)
    assert expected_covers == covers(decision, ids)
