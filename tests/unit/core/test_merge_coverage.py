"""Branch coverage gate: the merge tests cover every line and branch of `claimwatch.core.merge`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

ROOT = REPO
MERGE = ROOT / "streams" / "claimwatch" / "core" / "merge.py"
TESTS = ["tests/unit/core/test_merge.py", "tests/unit/core/test_merge_differential.py"]


def _coverage(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m coverage ARGS` in the project with its data file in `tmp`."""
    env = {**os.environ, "COVERAGE_FILE": str(tmp / ".coverage")}
    return subprocess.run(
        [sys.executable, "-m", "coverage", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_merge_module_has_no_coverage_pragmas() -> None:
    """Nothing in the module is excluded from measurement."""
    assert "pragma" not in MERGE.read_text(encoding="utf-8")


def test_merge_tests_cover_every_branch(tmp_path: Path) -> None:
    """Under coverage.py with --branch the merge tests reach 100 % of lines and branches."""
    run = _coverage(
        tmp_path,
        "run",
        "--branch",
        "--include=*/streams/claimwatch/core/merge.py",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *TESTS,
    )
    assert 0 == run.returncode, run.stdout[-3000:] + run.stderr[-3000:]
    report = tmp_path / "coverage.json"
    done = _coverage(tmp_path, "json", "-o", str(report))
    assert 0 == done.returncode, done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    (measured,) = [
        name for name in data["files"] if name.endswith("streams/claimwatch/core/merge.py")
    ]
    summary = data["files"][measured]["summary"]
    assert 0 < summary["num_branches"]
    assert (summary["num_statements"], summary["num_branches"]) == (
        summary["covered_lines"],
        summary["covered_branches"],
    ), data["files"][measured]["missing_lines"]
    branch_percent = 100.0 * summary["covered_branches"] / summary["num_branches"]
    assert (100.0, 100.0, 0) == (
        branch_percent,
        summary["percent_covered"],
        summary["excluded_lines"],
    )
