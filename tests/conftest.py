"""Shared fixtures for the test suite: the example policy, the unit tests' clock, units."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from claimwatch import units
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.policy.loading import load_policy

from tests.support.paths import EXAMPLE_POLICY

NOW = "2026-09-14T09:12:30Z"

#: fixtures of real services every test may ask for: `opa_url` (a real OPA with the packs)
pytest_plugins = ["tests.support.opa"]


@pytest.fixture(scope="session")
def policy() -> CompiledPolicy:
    """The bundled example policy, compiled."""
    return load_policy(EXAMPLE_POLICY)


@pytest.fixture(scope="session")
def now_us() -> int:
    """The fixed clock time the unit tests decide at."""
    return parse_rfc3339(NOW)


@pytest.fixture
def fresh_unit_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """No unit known from before for the test; yields what `learned` was told, in order."""
    told: list[str] = []
    monkeypatch.setattr(units, "_known_units", set())
    monkeypatch.setattr(units, "_known_scales", {})
    monkeypatch.setattr(units, "_learned", lambda: told.append("learned"))
    units.converter.cache_clear()
    yield told
    units.converter.cache_clear()
