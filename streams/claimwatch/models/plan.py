"""Plans and their step statuses (issue 9): which steps may run given the facts they read."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

StepState = Literal["runnable", "blocked", "waiting", "rejected"]

#: Bounds of one plan (a bigger plan is refused and sent to the dead-letter topic).
MAX_STEPS = 256
MAX_READS = 64


def check_fact_key(key: str) -> str:
    """A fact key is `subject|field` with both parts non-empty (the split is at the last `|`)."""
    subject, bar, field = key.rpartition("|")
    if not bar or not subject or not field:
        raise ValueError(f"fact key {key!r} is not `subject|field`")
    return key


class PlanStep(BaseModel):
    """One step of a plan: the facts it reads and whether its effect can be undone."""

    model_config = ConfigDict(extra="forbid")

    step_id: str = Field(min_length=1, max_length=128)
    reads: list[str] = Field(
        default_factory=list,
        max_length=MAX_READS,
        description="fact keys `subject|field` (the key of claims and decisions)",
    )
    irreversible: bool = Field(
        default=True,
        description="runnable only when every fact it reads resolved to `proceed`; "
        "a step that does not say is treated as irreversible",
    )
    description: str | None = Field(default=None, max_length=1024, description="for humans")

    @field_validator("reads")
    @classmethod
    def _fact_keys(cls, reads: list[str]) -> list[str]:
        for key in reads:
            check_fact_key(key)
        return reads


class PlanRecord(BaseModel):
    """A plan; topic `plans`, keyed by plan id (an empty value deletes the plan)."""

    model_config = ConfigDict(extra="forbid", title="Plan")

    plan_id: str = Field(min_length=1, max_length=128)
    steps: list[PlanStep] = Field(min_length=1, max_length=MAX_STEPS)
    agent_id: str | None = None
    trace_id: str | None = None

    @model_validator(mode="after")
    def _unique_steps(self) -> PlanRecord:
        seen: set[str] = set()
        for step in self.steps:
            if step.step_id in seen:
                raise ValueError(f"step_id {step.step_id!r} is used twice")
            seen.add(step.step_id)
        return self


class FactDecision(BaseModel):
    """The decision a step status was computed from, for one fact the step reads."""

    model_config = ConfigDict(extra="forbid")

    fact: str
    decision_id: str | None = Field(description="null: the fact has no decision yet")
    outcome: str | None
    action: str | None
    permits: bool = Field(description="this decision lets the step run")


class StepStatusRecord(BaseModel):
    """The status of one plan step; topic `plans.steps`, keyed by plan id."""

    model_config = ConfigDict(extra="forbid", title="StepStatus")

    plan_id: str
    step_id: str
    status: StepState
    irreversible: bool
    reads: list[str]
    blocking: list[str] = Field(description="ids of the decisions that block the step")
    waiting: list[str] = Field(description="facts the step reads that have no decision yet")
    facts: list[FactDecision]
    reason: str | None = Field(
        default=None,
        description="why the step is `rejected`: its plan was refused (past a bound, or its "
        "handling failed: `internal_error: <type>: <message>`); a rejected step never runs",
    )
