"""`claimwatch resolve` shared out among processes: byte for byte the one-process output."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from claimwatch.audit.resolve_file import read_claims, resolve_lines
from claimwatch.audit.resolve_parallel import owner_of, resolve_shared, sort_key
from claimwatch.audit.shares import PARALLEL_FROM_BYTES
from claimwatch.core.timeutil import format_rfc3339
from hypothesis import given
from hypothesis import strategies as st

from tests.support.claims import claim_line
from tests.support.cli import run_cli
from tests.support.feed import hostile_policy
from tests.support.hostile import KINDS, T0, hostile_corpus, hostile_policy_yaml, valid_claims

NOW_US = T0 + 10_000_000
AT = format_rfc3339(T0)
CORPUS = hostile_corpus(11, 2 * len(KINDS))


def mixed_file(path: Path, claims: int) -> Path:
    """Valid claims (few facts, many facts, repeats), then every corpus line that can be one."""
    good = [orjson.dumps(c) for c in valid_claims(5, claims)]
    many = [
        claim_line(f"m-{n}", "ledger", "paid", field="status", subject=f"s:{n}", observed_at=AT)
        for n in range(claims // 4)
    ]
    bad = [m.value or b"" for m in CORPUS if m.offline is not None]
    lines = [*good, *many, *good[:50], *bad, b"", *many[-20:]]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def one_process(path: Path) -> tuple[bytes, list[str]]:
    """What the one-process path writes and reports."""
    with path.open("rb") as handle:
        batch = read_claims(handle, str(path), hostile_policy())
    out = b"".join(resolve_lines(batch, hostile_policy(), NOW_US))
    return out, [str(e) for e in batch.errors]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_shared_out_resolve_gives_the_one_process_bytes_and_errors(
    tmp_path: Path, jobs: int
) -> None:
    """Decisions and refused lines are the same, in the same order, for any process count."""
    path = mixed_file(tmp_path / "mixed.jsonl", 2_000)
    out = io.BytesIO()

    errors = resolve_shared(str(path), str(path), hostile_policy(), NOW_US, jobs, out)

    expected_out, expected_errors = one_process(path)
    assert [] != expected_errors
    assert expected_out == out.getvalue()
    assert expected_errors == [str(e) for e in errors]


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=8))
def test_every_line_has_exactly_one_reader(raw: bytes, parts: int) -> None:
    """Any bytes at all map to one process, the same one every time."""
    owner = owner_of(raw, parts)
    assert 0 <= owner < parts
    assert owner == owner_of(raw, parts)


_NAME = st.text(st.characters(blacklist_categories=["Cc"]), min_size=1, max_size=6)


@given(st.tuples(_NAME, _NAME), st.tuples(_NAME, _NAME))
def test_sort_keys_order_facts_as_their_names_do(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    """A part's line keys compare as the (subject, field) pairs the output is sorted by."""
    assert (first < second, first == second) == (
        sort_key(*first) < sort_key(*second),
        sort_key(*first) == sort_key(*second),
    )


def test_a_fact_is_read_by_one_process_whatever_else_its_lines_hold() -> None:
    """Two claims of one fact go to the same process, however their other keys differ."""
    first = orjson.dumps({"subject": "s:1", "field": "f", "claim_id": "a", "value": 1})
    second = orjson.dumps({"field": "f", "value": [1, 2], "subject": "s:1", "x": None})
    assert [owner_of(first, n) for n in range(1, 9)] == [owner_of(second, n) for n in range(1, 9)]


def test_the_command_with_jobs_equals_one_job(tmp_path: Path) -> None:
    """`claimwatch resolve -j 2` on a file big enough to share out: the `-j 1` output."""
    path = mixed_file(tmp_path / "big.jsonl", 20_000)
    assert PARALLEL_FROM_BYTES <= path.stat().st_size
    policy = tmp_path / "hostile.yaml"
    policy.write_text(hostile_policy_yaml(), encoding="utf-8")
    now = format_rfc3339(NOW_US)
    base = ("resolve", "--policy", str(policy), "--now", now, str(path))

    one, two = run_cli(*base, "-j", "1"), run_cli(*base, "-j", "2")

    assert 1 == one.returncode
    assert (one.returncode, one.stdout, one.stderr) == (two.returncode, two.stdout, two.stderr)
