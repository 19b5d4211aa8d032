"""Policy verdicts: one check's signal in, one decision per request out.

The contract: docs/conflict-kinds.md#policy-verdicts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

CheckDecision = Literal["allow", "deny", "modify"]
VerdictOutcome = Literal["allow", "deny", "modify", "undecided"]
VerdictAction = Literal["proceed", "modify", "block", "escalate"]
AttackType = Literal["rebut", "undercut", "undermine"]
Label = Literal["in", "out", "undec"]


class VerdictSignal(BaseModel):
    """What one policy check says about one request; topic `verdicts`, keyed by request id."""

    model_config = ConfigDict(extra="allow", title="VerdictSignal")

    request_id: str = Field(min_length=1, max_length=128)
    request_type: str | None = Field(
        default=None,
        max_length=128,
        description="selects the expected checks when the policy lists them by type",
    )
    check: str = Field(
        min_length=1, max_length=128, description="the check that produced the signal"
    )
    argument: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="argument id, unique within the request; default: the check name",
    )
    kind: str = Field(
        min_length=1, max_length=128, description="argument kind, matched by the attack rules"
    )
    claim: str = Field(max_length=4096, description="what the check found, for humans")
    strength: float = Field(ge=0, le=1)
    decision: CheckDecision
    observed_at: AwareDatetime = Field(description="when the check ran; drives the event clock")

    def argument_id(self) -> str:
        """The argument's id within its request."""
        return self.argument or self.check


class VerdictArgumentRecord(BaseModel):
    """One argument as decided: the signal's content and its grounded label."""

    model_config = ConfigDict(extra="forbid")

    id: str
    check: str
    kind: str
    claim: str
    strength: float
    decision: CheckDecision
    observed_at: str
    label: Label = Field(description="grounded labelling: in, out or undec")
    accepted: bool = Field(description="in every extension of the chosen semantics")


class VerdictAttackRecord(BaseModel):
    """One attack of the graph and the type of the rule that made it."""

    model_config = ConfigDict(extra="forbid")

    attacker: str
    attacked: str
    type: AttackType


class VerdictRefusedRecord(BaseModel):
    """A signal refused on arrival (e.g. observed too far ahead of the clock), and why."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="the refused signal's argument id")
    reason: str


class VerdictDecision(BaseModel):
    """The decision for one request; topic `verdicts.decisions`, keyed by request id."""

    model_config = ConfigDict(extra="forbid", title="VerdictDecision")

    decision_id: str
    request_id: str
    request_type: str | None
    policy_version: str
    semantics: Literal["grounded", "complete", "preferred", "stable"]
    decision: VerdictOutcome = Field(description="undecided escalates: never a silent allow")
    action: VerdictAction
    reason: str = Field(
        description="why; `internal_error: <type>: <message>` when deciding the request failed"
    )
    tie: bool = Field(description="accepted arguments disagreed and the tie rule decided")
    timed_out: bool = Field(description="decided at the timeout with expected checks missing")
    expected_checks: list[str]
    missing_checks: list[str]
    accepted: list[str]
    extensions: list[list[str]]
    arguments: list[VerdictArgumentRecord]
    attacks: list[VerdictAttackRecord]
    refused: list[VerdictRefusedRecord] = Field(
        default_factory=list, description="signals refused on arrival, with the reason"
    )
    decided_at: str
