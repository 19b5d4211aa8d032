"""The ablation benchmark switches off exactly the parts it names, in the child only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ablate import ABLATION, SETS, ablated
from bench.children import Child

ROOT = Path(__file__).resolve().parents[2]
#: prints the name of each function an ablation may replace
PROBE = (
    "import claimwatch.core.processor as p, claimwatch.core.resolve as r, "
    "claimwatch.worker.claims.agents as a; "
    "print(p.entry_of.__name__, r.decision_id.__name__, r.reason_for.__name__, a._count.__name__)"
)


def _probe(parts: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ABLATION}{os.pathsep}{ROOT}"}
    env.pop("CLAIMWATCH_ABLATE", None)
    if parts is not None:
        env["CLAIMWATCH_ABLATE"] = parts
    command = [sys.executable, "-c", PROBE]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=ROOT)


@pytest.mark.parametrize(
    ("parts", "names"),
    [
        (None, "entry_of decision_id reason_for _count"),
        ("", "entry_of decision_id reason_for _count"),
        ("lag", "_no_lag decision_id reason_for _count"),
        ("ids,reason", "entry_of _hashed_id _no_reason _count"),
        ("lag, metrics,ids,reason", "_no_lag _hashed_id _no_reason _no_count"),
    ],
)
def test_the_named_parts_and_no_others_are_switched_off(parts: str | None, names: str) -> None:
    """A child with CLAIMWATCH_ABLATE runs without exactly the parts it names."""
    done = _probe(parts)
    assert 0 == done.returncode, done.stderr
    assert names == done.stdout.strip()


def test_an_unknown_part_stops_the_child_with_its_name() -> None:
    """A misspelt part is an error naming it, not a worker silently run whole."""
    done = _probe("lag,metrix")
    assert 2 == done.returncode
    expected = "CLAIMWATCH_ABLATE: unknown part(s) metrix; known: lag, metrics, ids, reason"
    assert expected == done.stderr.strip()


def test_every_set_names_known_parts() -> None:
    """Each side of the benchmark starts (its parts are all known)."""
    for parts in SETS.values():
        assert 0 == _probe(parts).returncode


@pytest.mark.parametrize(("parts", "ablating"), [("", False), ("lag,ids", True)])
def test_only_an_ablated_worker_gets_the_ablation_path(parts: str, ablating: bool) -> None:
    """The shipped worker side runs with the environment as it is."""
    child = ablated(Child("worker x", ["claimwatch", "worker"], Path("x.log")), parts)
    assert ablating == ("CLAIMWATCH_ABLATE" in child.env)
    if ablating:
        assert parts == child.env["CLAIMWATCH_ABLATE"]
        assert str(ABLATION) == child.env["PYTHONPATH"].split(":")[0]
