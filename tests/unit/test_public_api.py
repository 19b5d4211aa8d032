"""The public API at the package root: every name resolves, offline calls work, lazily."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import claimwatch
import pytest

from tests.support.paths import REPO

POLICY = REPO / "examples" / "policy.yaml"
NOW = "2026-09-14T09:12:30Z"
CLAIMS = [
    {
        "claim_id": "api-1",
        "subject": "invoice:7",
        "field": "payment_status",
        "source": "billing-api",
        "observed_at": "2026-09-14T09:12:00Z",
        "status": "ok",
        "value": "paid",
    },
    {
        "claim_id": "api-2",
        "subject": "invoice:7",
        "field": "payment_status",
        "source": "reporting-replica",
        "observed_at": "2026-09-14T09:12:10Z",
        "status": "ok",
        "value": "unpaid",
    },
]


@pytest.mark.parametrize("name", claimwatch.__all__)
def test_every_public_name_resolves_from_the_root(name: str) -> None:
    """Each name of `__all__` is importable as `from claimwatch import <name>`."""
    assert hasattr(claimwatch, name)
    assert name in dir(claimwatch)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = claimwatch.Nope  # type: ignore[attr-defined]


def test_importing_the_package_loads_neither_kafka_nor_pydantic() -> None:
    """`import claimwatch` is cheap: the CLI and the pure core pay only for what they use."""
    heavy = "{'aiokafka', 'pydantic', 'faust'}"
    code = f"import sys, claimwatch; print(sorted({heavy} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "[]" == done.stdout.strip()


def test_resolve_replay_and_explain_work_offline_from_the_root() -> None:
    """A system of record outranks a derived replica, offline, from plain dicts."""
    policy = claimwatch.load_policy(POLICY)
    resolved = claimwatch.resolve(CLAIMS, policy, now=NOW)
    assert ([], ["resolved"], ["paid"]) == (
        resolved.errors,
        [d["outcome"] for d in resolved.decisions],
        [d["value"] for d in resolved.decisions],
    )
    assert "RESOLVED" in claimwatch.explain(resolved.decisions[0])
    envelopes = [claimwatch.ClaimEnvelope.model_validate(c) for c in CLAIMS]
    aware = datetime(2026, 9, 14, 9, 12, 30, tzinfo=UTC)
    assert resolved.decisions == claimwatch.resolve(envelopes, POLICY, now=aware).decisions
    replayed = claimwatch.replay(CLAIMS, policy)
    assert ["paid"] == [d["value"] for d in replayed.decisions][-1:]


@pytest.mark.parametrize(
    ("claims", "key"),
    [([b"{not json"], "claim"), (['{"claim_id": "x"}'], "claim")],
)
def test_an_unreadable_claim_is_an_error_of_its_own(claims: list[str | bytes], key: str) -> None:
    resolved = claimwatch.resolve([*claims, *CLAIMS], POLICY, now=NOW)
    assert ([1], [key], 1) == (
        [e.line for e in resolved.errors],
        [e.key for e in resolved.errors],
        len(resolved.decisions),
    )


def test_a_naive_datetime_is_refused() -> None:
    with pytest.raises(ValueError, match="time zone"):
        claimwatch.resolve(CLAIMS, POLICY, now=datetime(2026, 9, 14, 9, 12, 30))
