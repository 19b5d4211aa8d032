"""The one-pass commands: resolve with no collection at all, replay with no full one."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch.audit.replay import replay_lines
from claimwatch.audit.resolve_file import read_claims, resolve_lines
from claimwatch.cli import replay as replay_command
from claimwatch.cli import resolve as resolve_command
from claimwatch.worker.collector import NEVER

from tests.support.feed import hostile_policy
from tests.support.hostile import KINDS, T0, hostile_corpus, valid_claims
from tests.support.paths import REPO

POLICY = REPO / "examples" / "policy.yaml"
CLAIMS = REPO / "examples" / "claims.jsonl"


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """Python's thresholds before the test; put back after it."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def enabled_during(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[bool]:
    """Whether the collector was on at each call of `module.name` (the calls go through)."""
    during: list[bool] = []
    real = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        during.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return during


def mixed_lines() -> list[bytes]:
    """The README's claims, the hostile corpus's lines a file can hold, 500 valid claims."""
    corpus = [m.value or b"" for m in hostile_corpus(3, 2 * len(KINDS)) if m.offline is not None]
    valid = [orjson.dumps(c) for c in valid_claims(5, 500)]
    return [*CLAIMS.read_bytes().splitlines(), *corpus, *valid]


def test_resolve_reads_and_decides_with_no_collection(
    monkeypatch: pytest.MonkeyPatch,
    capfdbinary: pytest.CaptureFixture[bytes],
    thresholds: tuple[int, int, int],
) -> None:
    """`claimwatch resolve` reads its file with the collector off, and puts it back."""
    during = enabled_during(monkeypatch, resolve_command, "read_claims")
    resolve_command.resolve(POLICY, str(CLAIMS), "2026-09-14T09:12:30Z", 1 << 20, 1)
    decided = capfdbinary.readouterr().out
    facts = {
        (c["subject"], c["field"]) for c in map(orjson.loads, CLAIMS.read_bytes().splitlines())
    }
    assert ([False], True, thresholds, len(facts)) == (
        during,
        gc.isenabled(),
        gc.get_threshold(),
        decided.count(b"\n"),
    )


def test_resolving_good_and_refused_lines_makes_no_cyclic_garbage() -> None:
    """What resolve reads and decides is freed by reference counts alone (no collection).

    Read once first: the modules a field type loads on first use leave their classes'
    drafts as garbage once (dataclasses with slots are made anew), not once per line.
    """
    lines, policy = mixed_lines(), hostile_policy()
    list(resolve_lines(read_claims(lines, "mixed.jsonl", policy), policy, T0))
    gc.collect()
    gc.disable()
    try:
        batch = read_claims(lines, "mixed.jsonl", policy)
        decided = list(resolve_lines(batch, policy, T0 + 10_000_000))
        del batch
        found = gc.collect()
    finally:
        gc.enable()
    assert (True, 0) == (len(decided) > 100, found)


def test_replaying_good_and_refused_lines_makes_no_cyclic_garbage() -> None:
    """What a file replay reads and decides is freed by reference counts alone.

    Replayed once first, for the modules a field type loads on first use (see the resolve
    test above).
    """
    lines, policy = mixed_lines(), hostile_policy()
    replay_lines(policy, lines, "mixed.jsonl")
    gc.collect()
    gc.disable()
    try:
        replayed = replay_lines(policy, lines, "mixed.jsonl")
        decided, refused = len(replayed.decisions), len(replayed.errors)
        del replayed
        found = gc.collect()
    finally:
        gc.enable()
    assert (True, True, 0) == (decided > 100, refused > 10, found)


def test_a_file_is_replayed_with_no_collection(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, thresholds: tuple[int, int, int]
) -> None:
    """`claimwatch replay --input` decides with the collector off, and puts it back."""
    during = enabled_during(monkeypatch, replay_command, "replay_file")
    replay_command.replay(POLICY, input=CLAIMS, out=str(tmp_path / "out.jsonl"))
    assert ([False], True, thresholds) == (during, gc.isenabled(), gc.get_threshold())


def test_replay_runs_inside_one_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, thresholds: tuple[int, int, int]
) -> None:
    """`claimwatch replay` does all its work with the oldest generation off, and restores it."""
    during: list[int] = []

    def run(_req: Any) -> bool:
        during.append(gc.get_threshold()[2])
        return False

    monkeypatch.setattr(replay_command, "_run_replay", run)
    replay_command.replay(POLICY, input=CLAIMS, out=str(tmp_path / "out.jsonl"))
    assert ([NEVER], thresholds) == (during, gc.get_threshold())
