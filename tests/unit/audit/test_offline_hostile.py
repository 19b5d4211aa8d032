"""`claimwatch resolve` and `replay` over the hostile corpus: bad lines named, the rest decided."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.audit import replay
from claimwatch.audit import resolve_file as offline
from claimwatch.audit.replay import replay_lines
from claimwatch.audit.resolve_file import read_claims, resolve_batch
from claimwatch.core import processor
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import claim_line
from tests.support.cli import run_cli
from tests.support.feed import hostile_policy
from tests.support.hostile import KINDS, T0, HostileMessage, hostile_corpus, hostile_policy_yaml

CORPUS = hostile_corpus(7, 2 * len(KINDS))
NOW = format_rfc3339(T0 + 10_000_000)
#: A file's own claims drive a replay's clock (docs/concepts.md#time): a claim an hour ahead moves
#: it an hour on, and a day-old claim is stale for it (while resolve at NOW decides it
#: otherwise); both are left out of replay files.
CLOCK_MOVERS = frozenset({"time_an_hour_ahead", "time_a_day_old"})
#: a claim of the corpus policy as a JSON line: `corpus_line(claim_id, subject=...)`
corpus_line = partial(
    claim_line, source="ledger", value="paid", field="status", observed_at=format_rfc3339(T0)
)
#: three lines on two facts; the tests make deciding the middle one fail
MIDDLE_FAILS = [
    corpus_line("ok-1", subject="s:1"),
    corpus_line("bad", subject="s:1"),
    corpus_line("ok-2", subject="s:2"),
]


def corpus_file(
    tmp_path: Path, skip: frozenset[str] = frozenset()
) -> tuple[Path, Path, dict[int, HostileMessage]]:
    """The corpus values that can be JSON lines, one per line; the policy; line -> record."""
    lines = [m for m in CORPUS if m.offline is not None and m.kind not in skip]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(m.value or b"" for m in lines) + b"\n")
    policy = tmp_path / "hostile.yaml"
    policy.write_text(hostile_policy_yaml(), encoding="utf-8")
    return path, policy, dict(enumerate(lines, start=1))


def named_lines(stderr: bytes, path: Path) -> set[int]:
    """The line numbers the command reported as `claimwatch: FILE:LINE: ...`."""
    prefix = f"claimwatch: {path}:"
    lines = stderr.decode().splitlines()
    assert [] == [line for line in lines if not line.startswith(prefix)]
    return {int(line[len(prefix) :].split(":")[0]) for line in lines}


def decided_ids(stdout: bytes) -> set[str]:
    """Every claim id listed in the printed decisions."""
    return {c["claim_id"] for line in stdout.splitlines() for c in orjson.loads(line)["claims"]}


def test_resolve_names_every_bad_line_and_decides_every_good_fact(tmp_path: Path) -> None:
    """Exit 1; each bad line on stderr as FILE:LINE; a decision for every good line's claim."""
    path, policy, lines = corpus_file(tmp_path)
    proc = run_cli("resolve", "--policy", str(policy), "--now", NOW, str(path))
    bad = {n for n, m in lines.items() if m.offline == "bad"}
    good = {m.claim_id for m in lines.values() if m.offline == "decided"}
    assert (1, bad) == (proc.returncode, named_lines(proc.stderr, path))
    assert set() == good - decided_ids(proc.stdout)


def test_replay_names_every_bad_line_and_decides_every_good_fact(tmp_path: Path) -> None:
    """The same for `claimwatch replay --input`, on the file's own clock."""
    path, policy, lines = corpus_file(tmp_path, CLOCK_MOVERS)
    proc = run_cli("replay", "--policy", str(policy), "--input", str(path))
    bad = {n for n, m in lines.items() if m.offline == "bad"}
    good = {m.claim_id for m in lines.values() if m.offline == "decided"}
    assert (1, bad) == (proc.returncode, named_lines(proc.stderr, path))
    assert set() == good - decided_ids(proc.stdout)


def failing_for(claim_id: str, real: Any) -> Any:
    """A stand-in for `resolve` that raises for the claims of one id."""

    def fake(claims: list[Any], policy: Any, now_us: int) -> Any:
        if any(c.claim_id == claim_id for c in claims):
            raise RuntimeError("boom")
        return real(claims, policy, now_us)

    return fake


def test_a_failure_deciding_one_fact_rejects_that_fact_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """resolve: the fact whose deciding fails is rejected, its lines errors; the others decide."""
    monkeypatch.setattr(offline, "resolve", failing_for("bad", offline.resolve))
    batch = read_claims(MIDDLE_FAILS, "f")
    records = list(resolve_batch(batch, hostile_policy(), T0))
    reason = "internal_error: RuntimeError: boom"
    assert [("rejected", reason), ("resolved", None)] == [
        (r["outcome"], r["reason"] if r["outcome"] == "rejected" else None) for r in records
    ]
    assert [{"bad": "rejected", "ok-1": "rejected"}, {"ok-2": "won"}] == [
        {c["claim_id"]: c["disposition"] for c in r["claims"]} for r in records
    ]
    assert [f"f:1: claim: {reason}", f"f:2: claim: {reason}"] == [str(e) for e in batch.errors]


def test_a_failure_replaying_one_line_costs_only_that_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """replay: an exception while handling a line is that line's error; the next lines replay."""
    real = replay.Runtime.handle_claim

    def handle_claim(
        self: Any, partition: int, offset: int, claim: Any, *rest: Any, **kw: Any
    ) -> Any:
        if claim.claim_id == "bad":
            raise RuntimeError("boom")
        return real(self, partition, offset, claim, *rest, **kw)

    monkeypatch.setattr(replay.Runtime, "handle_claim", handle_claim)
    result = replay_lines(hostile_policy(), MIDDLE_FAILS, "f")
    assert ["f:2: claim: internal_error: RuntimeError: boom"] == [str(e) for e in result.errors]
    assert {"ok-1", "ok-2"} == {c["claim_id"] for d in result.decisions for c in d["claims"]}


def test_a_fact_whose_deciding_fails_in_a_replay_is_rejected_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """replay: the fact is decided rejected, as live, and reported once; the other fact decides."""
    real = processor.resolve_entries

    def resolve_entries(claims: Any, *args: Any, **kwargs: Any) -> Any:
        claims = list(claims)
        if any(c.claim_id == "bad" for c in claims):
            raise RuntimeError("boom")
        return real(claims, *args, **kwargs)

    monkeypatch.setattr(processor, "resolve_entries", resolve_entries)
    result = replay_lines(hostile_policy(), MIDDLE_FAILS, "f")
    latest = {d["subject"]: d for d in result.decisions}
    assert {"s:1": "rejected", "s:2": "resolved"} == {k: d["outcome"] for k, d in latest.items()}
    assert {"bad": "rejected", "ok-1": "rejected"} == {
        c["claim_id"]: c["disposition"] for c in latest["s:1"]["claims"]
    }
    (error,) = result.errors
    assert "fact" == error.key
    assert error.reason.startswith("internal_error: RuntimeError: boom (fact s:1|status, 2 claim")


def test_replay_reports_lines_that_are_neither_decided_nor_redeliveries() -> None:
    """A claim id reused with other content is a line error, as in `claimwatch resolve`."""
    first = corpus_line("c1", subject="s:1")
    lines = [first, first, corpus_line("c1", subject="s:1", value="unpaid")]
    result = replay_lines(hostile_policy(), lines, "f")
    assert ["f:3: claim_id: claim_id 'c1' was already used for this fact with other content"] == [
        str(e) for e in result.errors
    ]


GOOD_DECISION = b'{"decision_id": "dec_1", "subject": "invoice:1", "field": "payment_status"}'


@pytest.mark.parametrize(
    ("lines", "bad", "why"),
    [
        ([GOOD_DECISION, b"{oops"], 2, "not a decision: unexpected"),
        ([GOOD_DECISION, b"[1, 2]"], 2, "not a decision: not a JSON object"),
        ([b'{"decision_id": "dec_1"}', GOOD_DECISION], 1, "not a decision: no string `subject`"),
        (
            [GOOD_DECISION, b'{"subject": "s", "field": "f"}'],
            2,
            "not a decision: no string `decision_id`",
        ),
    ],
)
def test_diff_against_a_decisions_file_with_a_bad_line_names_the_line(
    tmp_path: Path, lines: list[bytes], bad: int, why: str
) -> None:
    """`--diff-against FILE` with a line that is no decision: one line FILE:LINE, exit 1."""
    path, policy, _ = corpus_file(tmp_path, CLOCK_MOVERS)
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_bytes(b"\n".join(lines) + b"\n")
    proc = run_cli(
        "replay", "--policy", str(policy), "--input", str(path), "--diff-against", str(recorded)
    )
    last = proc.stderr.decode().splitlines()[-1]
    expected = f"claimwatch: {recorded}:{bad}: {why}"
    assert (1, expected) == (proc.returncode, last[: len(expected)])
