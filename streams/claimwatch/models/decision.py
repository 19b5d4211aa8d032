"""The decision record: what was decided for one fact, and from which claims.

The format: docs/wire-format.md#the-decision.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

Outcome = Literal["resolved", "conflict", "insufficient", "rejected"]
Action = Literal["proceed", "degrade", "escalate"]
Disposition = Literal[
    "won",
    "corroborating",
    "contradicting",
    "outranked",
    "same_lineage",
    "stale",
    "no_evidence",
    "rejected",
]
ConflictKind = Literal["value", "existence"]


class ClaimRecord(BaseModel):
    """One claim as it was considered: its envelope plus what the policy made of it."""

    model_config = ConfigDict(extra="allow")

    claim_id: str
    source: str
    observed_at: JsonValue = Field(description="UTC when it parsed, else as sent")
    status: JsonValue
    authority: str = Field(description="the class the policy gives the source")
    lineage: str
    disposition: Disposition
    claimed_authority: str | None = Field(default=None, description="the producer's own label")
    dissent: bool | None = None
    temporal: bool | None = None
    error: str | None = None
    unregistered: bool | None = None


class Alternative(BaseModel):
    """A competing value with its source and time."""

    model_config = ConfigDict(extra="forbid")

    value: JsonValue
    canonical: JsonValue
    exists: bool
    source: str
    claim_id: str
    observed_at: str


class DecisionRecord(BaseModel):
    """A decision about one fact under one policy version."""

    model_config = ConfigDict(extra="forbid", title="Decision")

    decision_id: str
    subject: str
    field: str
    policy_version: str
    outcome: Outcome
    value: JsonValue
    canonical: JsonValue
    exists: bool | None
    conflict_kind: ConflictKind | None
    reason: str
    action: Action
    corroboration: int
    alternatives: list[Alternative]
    decided_at: str
    claims: list[ClaimRecord]
