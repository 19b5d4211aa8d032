"""The checked-in JSON Schemas: no drift from the pydantic models, and they accept real data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from claimwatch.models.generate import expected_files

from tests.support.paths import REPO

ROOT = REPO
POLICY = ROOT / "examples" / "policy.yaml"
CLAIMS = ROOT / "examples" / "claims.jsonl"
OUT_DIR = ROOT / "schemas"
NOW = "2026-09-14T09:12:30Z"


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((OUT_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _problems(name: str, instance: Any) -> list[str]:
    return [
        f"{error.json_path}: {error.message}" for error in _validator(name).iter_errors(instance)
    ]


@pytest.mark.parametrize("path", sorted(expected_files(OUT_DIR)), ids=lambda p: p.name)
def test_checked_in_schema_matches_the_models(path: Path) -> None:
    """Each schemas/ file equals what the pydantic models generate."""
    expected = expected_files(OUT_DIR)[path]
    actual = path.read_text(encoding="utf-8") if path.exists() else None
    assert expected == actual, f"{path.name} is out of date with the models: run `make schemas`"


def test_no_stray_schema_files() -> None:
    """Every checked-in schema file comes from a model."""
    expected = {p.name for p in expected_files(OUT_DIR)}
    actual = {p.name for p in OUT_DIR.glob("*.schema.json")}
    assert expected == actual, "schemas/ has files no model generates: run `make schemas`"


def test_every_example_claim_validates() -> None:
    """Every line of examples/claims.jsonl is a valid claim envelope."""
    lines = [line for line in CLAIMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines
    for number, line in enumerate(lines, start=1):
        assert [] == _problems("claim", json.loads(line)), f"claims.jsonl:{number}"


def test_claim_schema_rejects_a_claim_without_subject() -> None:
    """The claim schema is not vacuous: a claim missing `subject` fails it."""
    claim = json.loads(CLAIMS.read_text(encoding="utf-8").splitlines()[0])
    del claim["subject"]
    assert [] != _problems("claim", claim)


def test_example_policy_validates() -> None:
    """examples/policy.yaml, loaded as plain YAML, is valid against the policy schema."""
    assert [] == _problems("policy", yaml.safe_load(POLICY.read_text(encoding="utf-8")))


@pytest.mark.parametrize("duration", ["500ms", "60s", "5m", "24h", "2d", 30])
def test_policy_schema_accepts_durations(duration: object) -> None:
    """Durations the loader accepts are accepted by the schema too."""
    policy = {"policy_version": "v1", "defaults": {"settle": duration, "freshness": duration}}
    assert [] == _problems("policy", policy)


def test_policy_schema_accepts_until_edited() -> None:
    """`until_edited` is a valid freshness budget."""
    policy = {
        "policy_version": "v1",
        "fields": {"a": {"type": "string", "freshness": "until_edited"}},
    }
    assert [] == _problems("policy", policy)


def test_policy_schema_rejects_a_bad_duration() -> None:
    """`5 minutes` is refused by the schema, as by the loader."""
    policy = {"policy_version": "v1", "defaults": {"freshness": "5 minutes"}}
    assert [] != _problems("policy", policy)


def _resolved_example() -> list[dict[str, Any]]:
    claimwatch = Path(sys.executable).with_name("claimwatch")
    done = subprocess.run(
        [str(claimwatch), "resolve", "--policy", str(POLICY), "--now", NOW, str(CLAIMS)],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_example_decision_validates() -> None:
    """Every decision `claimwatch resolve` emits for the example is valid against its schema."""
    decisions = _resolved_example()
    outcomes = {d["outcome"] for d in decisions}
    assert {"resolved", "conflict", "insufficient", "rejected"} == outcomes
    for decision in decisions:
        fact = f"{decision['subject']}|{decision['field']}"
        assert [] == _problems("decision", decision), fact
