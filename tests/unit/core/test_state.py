"""Stored fact state: the compact form gives back every envelope exactly as it was sent."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.claim import claim_from_envelope
from claimwatch.core.state import FactState, content_hash, pack, unpack

BASE: dict[str, Any] = {
    "claim_id": "c-1",
    "subject": "invoice:1",
    "field": "balance",
    "source": "billing-api",
    "observed_at": "2026-09-14T09:00:00Z",
    "status": "ok",
    "value": {"amount": 1250, "currency": "USD", "minor_units": True},
}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"observed_at": "2026-09-14T11:00:00+02:00"},
        {"observed_at": "2026-09-14T09:00:00.500000Z"},
        {"observed_at": "2026-09-14T09:00:00.500Z"},
        {"observed_at": "2026-09-14T09:00:00.123456Z"},
        {"observed_at": "2026-09-14T09:00:00.123Z"},
        {"observed_at": "yesterday"},
        {"observed_at": None},
        {"status": "not_found", "value": None},
        {"status": None},
        {"trace_id": "t", "agent_id": "a", "tool": "x", "confidence": 0.5, "lineage": "l"},
        {"x": 1, "i": "shadow", "custom": {"nested": [1, 2]}},
    ],
    ids=[
        "plain",
        "offset",
        "fraction",
        "millis",
        "micros",
        "millis-nonzero",
        "bad-time",
        "null-time",
        "not-found",
        "no-status",
        "optional-keys",
        "colliding-extras",
    ],
)
def test_pack_is_lossless(change: dict[str, Any]) -> None:
    """Pack then unpack returns the same envelope (so content hashes still match)."""
    envelope = {**BASE, **change}
    if change.get("status") is None and "status" in change:
        del envelope["status"]
    claim = claim_from_envelope(envelope)
    restored = unpack(pack(claim), "invoice:1", "balance")
    assert envelope == dict(restored.envelope)
    assert content_hash(envelope) == content_hash(restored.envelope)


def test_arrival_error_survives_storage() -> None:
    """A claim refused on arrival stays refused after a restore."""
    from dataclasses import replace

    claim = replace(claim_from_envelope(BASE), arrival_error="ahead of the partition clock")
    state = FactState("invoice:1", "balance", 2, claims=[claim], window=(1, 2), due_us=3)
    restored = FactState.from_obj(state.to_obj())
    assert "ahead of the partition clock" == restored.claims[0].arrival_error
    assert ((1, 2), 3, 2) == (restored.window, restored.due_us, restored.partition)
