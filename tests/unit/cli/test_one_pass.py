"""The one-pass commands (resolve, replay) do their work with full collections off."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli import replay_command
from streams.cli import resolve as resolve_command
from streams.worker.collector import NEVER
from tests.support.paths import REPO

POLICY = REPO / "examples" / "policy.yaml"
CLAIMS = REPO / "examples" / "claims.jsonl"


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """Python's thresholds before the test; put back after it."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_resolve_reads_and_decides_inside_one_pass(
    monkeypatch: pytest.MonkeyPatch,
    capfdbinary: pytest.CaptureFixture[bytes],
    thresholds: tuple[int, int, int],
) -> None:
    """`claimwatch resolve` reads its file with the oldest generation off, and restores it."""
    during: list[int] = []
    real = resolve_command.read_claims

    def spy(*args: Any, **kwargs: Any) -> Any:
        during.append(gc.get_threshold()[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(resolve_command, "read_claims", spy)
    resolve_command.resolve(POLICY, str(CLAIMS), "2026-09-14T09:12:30Z", 1 << 20, 1)
    decided = capfdbinary.readouterr().out
    facts = {
        (c["subject"], c["field"]) for c in map(orjson.loads, CLAIMS.read_bytes().splitlines())
    }
    assert ([NEVER], thresholds, len(facts)) == (
        during,
        gc.get_threshold(),
        decided.count(b"\n"),
    )


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
