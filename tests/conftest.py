"""Shared fixtures for the test suite: the example policy and the unit tests' clock."""

from __future__ import annotations

import pytest

from streams.core.policy import CompiledPolicy
from streams.core.timeutil import parse_rfc3339
from streams.policy.loading import load_policy
from tests.support.paths import EXAMPLE_POLICY

NOW = "2026-09-14T09:12:30Z"


@pytest.fixture(scope="session")
def policy() -> CompiledPolicy:
    """The bundled example policy, compiled."""
    return load_policy(EXAMPLE_POLICY)


@pytest.fixture(scope="session")
def now_us() -> int:
    """The fixed clock time the unit tests decide at."""
    return parse_rfc3339(NOW)
