"""The codec skips the limits scan only where orjson already guarantees what it checks."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from claimwatch.core.claim import Claim
from claimwatch.core.limits import MAX_NESTING
from claimwatch.wire.codec import MAX_CLAIM_BYTES, DecodeError, claim_of, decode_claim, keeps_limits
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.claims import envelope
from tests.support.hostile import hostile_corpus


def _scanned(raw: bytes) -> Claim | str:
    """What decoding makes of `raw` with the full scan: the claim, or the refusal's text."""
    try:
        return claim_of(orjson.loads(raw), within_limits=False)
    except (orjson.JSONDecodeError, DecodeError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _decoded(raw: bytes) -> Claim | str:
    """What `decode_claim` makes of `raw` (the scan skipped where `keeps_limits` holds)."""
    try:
        return decode_claim(raw)
    except DecodeError as exc:
        if str(exc).startswith("not JSON"):
            return f"JSONDecodeError: {str(exc).removeprefix('not JSON: ')}"
        return f"DecodeError: {exc}"


def _claim_bytes(value: Any, key: str = "value") -> bytes:
    body = envelope("c-1", "billing-api", subject="invoice:1", field="balance")
    body[key] = value
    return json.dumps(body).encode()  # Python writes integers of any size


def _nested(depth: int) -> bytes:
    return _claim_bytes(json.loads("[" * depth + "]" * depth))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (_claim_bytes(1), True),
        (_claim_bytes(2**63 - 1), False),  # 19 digits: scanned (and fits)
        (_claim_bytes(2**63), False),
        (_claim_bytes("1234567890123456789"), False),  # digits in a string: scanned too
        (_claim_bytes(123456789012345678), True),  # 18 digits cannot pass 2**63
        (_nested(MAX_NESTING - 1), True),  # the envelope's own brace makes MAX_NESTING
        (_nested(MAX_NESTING), False),
    ],
    ids=["small", "int64-max", "beyond-int64", "digit-string", "18-digits", "at-depth", "deep"],
)
def test_keeps_limits_holds_only_where_the_scan_cannot_find_anything(
    raw: bytes, expected: bool
) -> None:
    """keeps_limits is False for 19 digits in a row or more brackets than MAX_NESTING."""
    assert expected == keeps_limits(raw)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**66), 2**66)
    | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, -(2**63), -(2**63) - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES, key=st.sampled_from(["value", "lineage", "confidence", "extra"]))
def test_decoding_skips_the_scan_without_changing_any_outcome(value: Any, key: str) -> None:
    """Any JSON in any key: decode_claim gives what the full scan gives, claim or refusal."""
    raw = _claim_bytes(value, key)
    assert _scanned(raw) == _decoded(raw)


@pytest.mark.parametrize("depth", [MAX_NESTING - 2, MAX_NESTING - 1, MAX_NESTING, 200])
def test_nesting_around_the_limit_decodes_as_the_scan_says(depth: int) -> None:
    """Nesting just under, at and beyond the limit: the same claim or the same refusal."""
    raw = _nested(depth)
    assert _scanned(raw) == _decoded(raw)


def test_the_hostile_corpus_decodes_as_the_scan_says() -> None:
    """Every record of the hostile corpus: decode_claim agrees with the full scan."""
    values = [m.value for m in hostile_corpus(seed=7, count=400) if isinstance(m.value, bytes)]
    assert 300 < len(values)
    for raw in values:
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # not JSON: both sides refuse it before any scan
        if len(raw) > MAX_CLAIM_BYTES:
            continue  # over the size limit: decode_claim refuses it before parsing
        assert _scanned(raw) == _decoded(raw), raw[:200]
