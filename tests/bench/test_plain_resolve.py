"""The resolve baseline does the work claimwatch does: the same decisions, field by field."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import orjson

from bench import plain_resolve
from bench.workload import NOW, POLICY, claims
from tests.support.paths import REPO

#: every decision field the two must agree on (the reason is prose, the id another hash)
COMPARED = (
    "subject",
    "field",
    "policy_version",
    "outcome",
    "value",
    "canonical",
    "exists",
    "conflict_kind",
    "action",
    "corroboration",
    "alternatives",
    "decided_at",
)


def workload(tmp_path: Path, facts: int = 600, per_fact: int = 6) -> Path:
    """A benchmark workload file (every field type, every source class, some errors)."""
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in claims(facts, per_fact)))
    return path


def comparable(record: dict[str, Any]) -> tuple[Any, ...]:
    """The compared fields of a decision, and each claim's disposition and flags."""
    flags = sorted(
        (c["claim_id"], c["disposition"], c.get("dissent"), c.get("temporal"))
        for c in record["claims"]
    )
    return (*(record[k] for k in COMPARED), flags)


def test_the_baseline_decides_every_fact_as_claimwatch_resolve_does(tmp_path: Path) -> None:
    """Outcome, value, canonical, action, alternatives and every disposition are equal."""
    path = workload(tmp_path)
    out = io.StringIO()
    with redirect_stdout(out):
        plain_resolve.main(str(POLICY), str(path), NOW)
    command = ["resolve", "--policy", str(POLICY), "--now", NOW, str(path)]
    ours = subprocess.run(
        [sys.executable, "-m", "claimwatch.cli.main", *command],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    expected = [comparable(json.loads(line)) for line in ours.stdout.splitlines()]
    actual = [comparable(json.loads(line)) for line in out.getvalue().splitlines()]
    assert 600 == len(expected)
    assert {"resolved", "conflict"} <= {e[COMPARED.index("outcome")] for e in expected}
    assert expected == actual
