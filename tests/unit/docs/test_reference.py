"""docs/gen/reference.py: the policy and CLI reference pages cover every key and command."""

from __future__ import annotations

import runpy
from typing import Any

import pytest
from claimwatch.cli.main import COMMANDS
from claimwatch.models import policy as policy_models
from pydantic import BaseModel

from tests.support.doc_blocks import DOCS

GENERATOR: dict[str, Any] = runpy.run_path(str(DOCS / "gen" / "reference.py"), run_name="gen")
ROWS = {path: (kind, default, text) for path, kind, default, text in GENERATOR["policy_rows"]()}


def _models() -> list[type[BaseModel]]:
    """Every model of the policy file, found in its module rather than through the generator."""
    return [
        value
        for value in vars(policy_models).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == policy_models.__name__
        and not value.__name__.startswith("_")
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_key_has_a_row_with_a_description(model: type[BaseModel]) -> None:
    for name in model.model_fields:
        rows = [path for path in ROWS if path == name or path.endswith(f".{name}")]
        assert rows, f"{model.__name__}.{name} is not in the policy reference"
        assert all(ROWS[path][2] for path in rows), f"{model.__name__}.{name} has no description"


@pytest.mark.parametrize(
    ("path", "kind", "default"),
    [
        ("policy_version", "str", "*required*"),
        ("defaults.freshness", "duration", "`5m`"),
        ("defaults.settle", "duration", "`2s`"),
        ("defaults.on_conflict", None, "`block`"),
        ("fields.<field>.freshness", "duration or null", "none"),
        ("fields.<field>.whitespace", None, "`trim`"),
        ("alerts.conflict_spike.window", "duration", "`1m`"),
        ("alerts.conflict_spike.alpha", "float", "`0.001`"),
        ("signing.<source>.keys[].env", "str or null", "none"),
        ("argumentation.semantics", None, "`grounded`"),
    ],
)
def test_rows_show_types_and_defaults_as_a_policy_writes_them(
    path: str, kind: str | None, default: str
) -> None:
    actual_kind, actual_default, _ = ROWS[path]
    assert default == actual_default
    if kind is not None:
        assert kind == actual_kind


def test_policy_page_is_a_table_of_every_row() -> None:
    page = GENERATOR["policy_reference"]()
    assert page.startswith("# Policy file reference")
    assert len(ROWS) == sum(1 for line in page.splitlines() if line.startswith("| `"))


def test_cli_page_has_every_command_and_its_options() -> None:
    page = GENERATOR["cli_reference"]()
    for name in COMMANDS:
        assert f"## `claimwatch {name}`" in page
    assert "`--web-port <int>`" in page
    assert "`-p, --policy <path>`" in page
