"""Offline resolution speed, whole process: `claimwatch resolve` vs the plain baseline.

Both sides are run as a user runs them (a fresh interpreter, the policy file, the claims
file, output to a pipe that is drained), so start-up, policy loading and output count.
The baseline is `bench/plain_resolve.py` (docs/concepts.md#decide written plainly; the test
`tests/bench/test_plain_resolve.py` holds it to claimwatch's decisions). Start-up is
`claimwatch resolve` on an empty file, best of three, with the README's policy and with the
benchmark's. claimwatch runs as shipped (its default `--jobs`: the cores, at most 4) and
with `--jobs 1`; the baseline is one process.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from claimwatch.audit.shares import default_jobs

from bench.workload import NOW, POLICY

CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
#: The README's policy; the benchmark's own adds a quantity field, which loads pint (its
#: import and unit registry take about 0.2-0.45 s more)
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_POLICY = ROOT / "examples" / "policy.yaml"
#: claimwatch's own packages (compiled to bytecode before the runs, see `_bytecode`)
PACKAGES = [ROOT / "streams" / "claimwatch"]


def _bytecode() -> None:
    """Compile claimwatch's modules to bytecode, as an installed package has them.

    pip compiles what it installs; an editable checkout writes bytecode at first import,
    unless PYTHONDONTWRITEBYTECODE is set (as on this VM), when every start compiles each
    module again: `resolve` on an empty file took 0.34-0.45 s so and 0.28-0.30 s with
    bytecode (README policy, five runs each). Up-to-date files are left alone.
    """
    for package in PACKAGES:
        compileall.compile_dir(package, quiet=1)


def timed(argv: list[str]) -> dict[str, float]:
    """Run `argv` to its end, its output drained; wall seconds and the child's peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    lines = 0
    while chunk := proc.stdout.read(1 << 20):
        lines += chunk.count(b"\n")
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited with {proc.returncode}")
    return {
        "seconds": round(elapsed, 3),
        "lines": lines,
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
    }


#: Runs of each side, taken in turns; the median run of each is reported (this machine's
#: timings wander by a quarter between runs).
RUNS = 3


def median_run(runs: list[dict[str, float]]) -> dict[str, Any]:
    """The run of median time, with the times of all runs."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "all_seconds": [r["seconds"] for r in runs]}


def run(path: Path, claims: int) -> dict[str, Any]:
    """Both sides over `path`; claimwatch's speed-up over the baseline, and start-up."""
    _bytecode()
    argv_ours = [str(CLAIMWATCH), "resolve", "--policy", str(POLICY), "--now", NOW, str(path)]
    argv_one = [*argv_ours, "--jobs", "1"]
    argv_base = [sys.executable, "-m", "bench.plain_resolve", str(POLICY), str(path), NOW]
    ours_runs, one_runs, base_runs = [], [], []
    for _ in range(RUNS):
        ours_runs.append(timed(argv_ours))
        one_runs.append(timed(argv_one))
        base_runs.append(timed(argv_base))
    ours, one, base = median_run(ours_runs), median_run(one_runs), median_run(base_runs)
    if ours["lines"] != base["lines"]:
        raise RuntimeError(f"decisions: claimwatch {ours['lines']}, baseline {base['lines']}")
    startup = {}
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as empty:
        for name, policy in (("example_policy", EXAMPLE_POLICY), ("bench_policy", POLICY)):
            argv = [str(CLAIMWATCH), "resolve", "--policy", str(policy), "--now", NOW, empty.name]
            startup[name] = min(timed(argv)["seconds"] for _ in range(3))
    for side in (ours, one, base):
        side["claims_per_s"] = round(claims / side["seconds"])
    return {
        "claims": claims,
        "facts": ours["lines"],
        "jobs": default_jobs(),
        "claimwatch": ours,
        "claimwatch_one_process": one,
        "baseline": base,
        "speedup": round(base["seconds"] / ours["seconds"], 2),
        "speedup_one_process": round(base["seconds"] / one["seconds"], 2),
        "startup_s": startup,
    }
