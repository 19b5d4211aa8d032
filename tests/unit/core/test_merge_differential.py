"""Differential test: the merge against `git merge-file -p` on generated edits."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from claimwatch.core.merge import Style, merge

from tests.support.merge_edits import Edits, disjoint_edits, same_line_conflict

CASES = 300


def _git_merge(tmp: Path, edits: Edits, style: Style = "merge") -> tuple[str, int]:
    """`git merge-file -p` on the three texts: (printed result, exit code = conflict count)."""
    paths = []
    for name, text in (("ours", edits.ours), ("base", edits.base), ("theirs", edits.theirs)):
        path = tmp / name
        path.write_bytes(text.encode())
        paths.append(str(path))
    labels = ["-L", "ours", "-L", "base", "-L", "theirs"]
    extra = ["--diff3"] if style == "diff3" else []
    done = subprocess.run(
        ["git", "merge-file", "-p", *labels, *extra, *paths],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert 0 <= done.returncode < 127, done.stderr
    return done.stdout.decode(), done.returncode


def test_disjoint_edits_merge_like_git(tmp_path: Path) -> None:
    """Edits an unchanged line apart merge cleanly to the very text git produces."""
    rng = random.Random(20261129)
    for _ in range(CASES):
        edits = disjoint_edits(rng)
        text, code = _git_merge(tmp_path, edits)
        result = merge(edits.base, edits.ours, edits.theirs)
        assert (text, 0, 0) == (result.text, result.conflicts, code), edits
        assert text == merge(edits.base, edits.ours, edits.theirs, "diff3").text, edits


@pytest.mark.parametrize("style", ["merge", "diff3"])
def test_same_line_changed_differently_conflicts_like_git(tmp_path: Path, style: Style) -> None:
    """One line both sides change differently: both report the conflict, with the same text."""
    rng = random.Random(7 if style == "merge" else 8)
    for _ in range(CASES // 2):
        edits = same_line_conflict(rng)
        text, code = _git_merge(tmp_path, edits, style)
        result = merge(edits.base, edits.ours, edits.theirs, style)
        assert 1 <= code, edits
        assert (text, code) == (result.text, result.conflicts), edits


def test_touching_edits_merge_where_git_conflicts(tmp_path: Path) -> None:
    """Edits that only abut: the merge is clean and keeps every line, git often gives up."""
    rng = random.Random(11)
    git_conflicts = 0
    for _ in range(CASES):
        edits = disjoint_edits(rng, touching=True)
        result = merge(edits.base, edits.ours, edits.theirs)
        assert 0 == result.conflicts, edits
        assert set(edits.added) <= set(result.text.splitlines(keepends=True)), edits
        text, code = _git_merge(tmp_path, edits)
        if code == 0:
            assert text == result.text, edits
        git_conflicts += code > 0
    assert 0 < git_conflicts
