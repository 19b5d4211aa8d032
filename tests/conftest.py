"""Shared helpers for the test suite: the example policy and claim builders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.core.claim import Claim, claim_from_envelope
from streams.core.policy import CompiledPolicy
from streams.core.timeutil import parse_rfc3339
from streams.policy.loading import load_policy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = ROOT / "examples" / "policy.yaml"
NOW = "2026-09-14T09:12:30Z"


@pytest.fixture(scope="session")
def policy() -> CompiledPolicy:
    """The bundled example policy, compiled."""
    return load_policy(EXAMPLE_POLICY)


@pytest.fixture(scope="session")
def now_us() -> int:
    """The fixed clock time the unit tests decide at."""
    return parse_rfc3339(NOW)


def make_claim(claim_id: str, source: str, value: Any = None, **extra: Any) -> Claim:
    """A payment_status claim of invoice:INV-1 unless told otherwise."""
    envelope: dict[str, Any] = {
        "claim_id": claim_id,
        "subject": "invoice:INV-1",
        "field": "payment_status",
        "source": source,
        "observed_at": "2026-09-14T09:12:00Z",
        "status": "ok",
    }
    if value is not None:
        envelope["value"] = value
    envelope.update(extra)
    return claim_from_envelope({k: v for k, v in envelope.items() if v is not ...})
