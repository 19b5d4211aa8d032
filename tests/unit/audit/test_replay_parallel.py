"""A file replay shared out among processes: the one-process decisions, in the same order."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from claimwatch.audit.replay import Replayer
from claimwatch.audit.replay_parallel import home_of, jobs_for, replay_shared
from claimwatch.audit.shares import PARALLEL_FROM_BYTES
from claimwatch.core.policy import CompiledPolicy
from claimwatch.policy.loading import parse_policy
from claimwatch.wire.codec import DecodeError, decode_claim
from claimwatch.wire.topics import partition_for
from hypothesis import given
from hypothesis import strategies as st

from tests.support.cli import run_cli
from tests.support.feed import hostile_policy
from tests.support.hostile import KINDS, T0, hostile_corpus, hostile_policy_yaml, valid_claims

MINUTE_US = 60_000_000
CORPUS = hostile_corpus(13, 2 * len(KINDS))
#: The corpus policy with a settle window: the end of the input closes open windows too
WINDOWED_YAML = hostile_policy_yaml().replace("settle: 0s", "settle: 3s")
POLICIES = {
    "settle-0": hostile_policy(),
    "settle-3s": CompiledPolicy(parse_policy(WINDOWED_YAML, "<windowed>")),
}


def stream_file(path: Path, rounds: int) -> Path:
    """Claims over hours (windows close on lines, claims go stale), repeats, corpus lines."""
    lines: list[bytes] = []
    for n in range(rounds):
        batch = [orjson.dumps(c) for c in valid_claims(n, 400, T0 + n * 7 * MINUTE_US)]
        lines += batch
        lines += batch[::37]  # redeliveries of some claims of this round
    lines[len(lines) // 2 : len(lines) // 2] = [m.value or b"" for m in CORPUS if m.value]
    lines += [b"", b"   ", b"[]", b'{"subject": "s", "field": "f"}']
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def one_process(
    path: Path, policy: CompiledPolicy, partitions: int
) -> tuple[list[bytes], list[str], int]:
    """What the one-process replay decides, in order, and the lines it refuses."""
    replayer = Replayer(policy, partitions, keep=False)
    bodies: list[bytes] = []
    replayer.on_decision = lambda _record, body: bodies.append(body)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            replayer.feed_line(raw, str(path), number)
    result = replayer.finish()
    return bodies, [str(e) for e in result.errors], result.records


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize(("jobs", "partitions"), [(1, 4), (2, 4), (3, 4), (4, 4), (2, 3)])
def test_shared_out_replay_gives_the_one_process_decisions_in_order(
    tmp_path: Path, jobs: int, partitions: int, policy: str
) -> None:
    """Decisions, refused lines and the records count equal one process's, for any split."""
    path = stream_file(tmp_path / "stream.jsonl", 12)
    bodies: list[bytes] = []

    result = replay_shared(path, POLICIES[policy], partitions, jobs, bodies.append)

    expected = one_process(path, POLICIES[policy], partitions)
    expected_bodies, expected_errors, expected_records = expected
    assert 1_000 < len(expected_bodies)
    assert [] != expected_errors
    assert expected_bodies == bodies
    assert expected_errors == [str(e) for e in result.errors]
    assert expected_records == result.records


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=8))
def test_every_line_has_one_home_partition(raw: bytes, partitions: int) -> None:
    """Any bytes at all map to one partition in range, the same one every time."""
    home = home_of(raw, partitions)
    assert 0 <= home < partitions
    assert home == home_of(raw, partitions)


def test_a_claims_home_is_the_partition_the_one_process_replay_uses() -> None:
    """For every claim the replay can decode, home_of names its fact's partition."""
    lines = [orjson.dumps(c) for c in valid_claims(3, 200)] + [m.value or b"" for m in CORPUS]
    decoded = 0
    for raw in lines:
        try:
            claim = decode_claim(raw)
        except DecodeError:
            continue
        decoded += 1
        assert partition_for(claim.fact_key.encode(), 4) == home_of(raw, 4)
    assert 200 < decoded


@pytest.mark.parametrize(("jobs", "partitions", "expected"), [(4, 2, 2), (2, 4, 2), (1, 4, 1)])
def test_no_more_processes_than_partitions(jobs: int, partitions: int, expected: int) -> None:
    """A process without a partition would only read the file: it is not forked."""
    assert expected == jobs_for(jobs, partitions)


def test_the_command_with_jobs_equals_one_job(tmp_path: Path) -> None:
    """`claimwatch replay -j 2` on a big file, with a diff: the `-j 1` output and report."""
    path = stream_file(tmp_path / "big.jsonl", 60)
    assert PARALLEL_FROM_BYTES <= path.stat().st_size
    policy = tmp_path / "windowed.yaml"
    policy.write_text(WINDOWED_YAML, encoding="utf-8")
    recorded = tmp_path / "recorded.jsonl"
    base = ("replay", "--policy", str(policy), "--input", str(path))
    assert 1 == run_cli(*base, "--out", str(recorded), "-j", "1").returncode
    with_diff = (*base, "--diff-against", str(recorded))

    one, two = run_cli(*with_diff, "-j", "1"), run_cli(*with_diff, "-j", "2")

    assert 1 == one.returncode
    assert b"replay vs recorded" in one.stderr
    assert (one.returncode, one.stdout, one.stderr) == (two.returncode, two.stdout, two.stderr)
    assert recorded.read_bytes() == one.stdout
