"""The alert record (docs/alerts.md): a conflict spike on a field, or a source's lag status."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["conflict_spike", "replica_lag"]
SpikeStatus = Literal["firing", "resolved"]
LagStatus = Literal["ok", "lagging", "stalled", "silent"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceCount(_Strict):
    """How many decisions entering conflict one source contradicted in."""

    source: str
    count: int = Field(ge=0)


class SourcePair(_Strict):
    """How often two sources contradicted each other (`["other"]` gathers the rest)."""

    sources: list[str] = Field(min_length=1, max_length=2)
    count: int = Field(ge=0)


class LagFigures(_Strict):
    """Recent lag samples of a source (seconds from the owner's first claim of a new value)."""

    median: float | None = Field(ge=0)
    max: float | None = Field(ge=0)
    samples: int = Field(ge=0)
    over_budget: int = Field(ge=0, description="recent conclusive samples above the budget")
    behind_facts: int = Field(ge=0, description="facts it still serves older than the budget")


class AlertRecord(_Strict):
    """An alert event: spike alerts carry count figures, lag alerts lag figures."""

    model_config = ConfigDict(extra="forbid", title="Alert")

    alert_id: str = Field(
        pattern=r"^alr_[0-9a-f]{32}$",
        description="hash of kind, field (and source), status and window start",
    )
    kind: Kind
    status: SpikeStatus | LagStatus
    field: str = Field(min_length=1)
    source: str | None = Field(default=None, description="the judged source (replica_lag)")
    previous_status: LagStatus | None = None
    window_start: str = Field(description="RFC 3339 UTC")
    window_end: str = Field(description="RFC 3339 UTC")
    count: int | None = Field(default=None, ge=0, description="decisions entering conflict")
    decisions: int | None = Field(default=None, ge=0, description="decisions in the window")
    expected: float | None = Field(default=None, ge=0, description="expected count (baseline)")
    p_value: float | None = Field(default=None, ge=0, le=1, description="Poisson upper tail")
    sources: list[SourceCount] | None = None
    source_pairs: list[SourcePair] | None = None
    sample_decision_ids: list[str] | None = Field(default=None, max_length=10)
    lag_seconds: LagFigures | None = None
    budget_seconds: float | None = Field(default=None, description="the field's freshness")
    claims: int | None = Field(default=None, ge=0, description="the source's claims in window")
    dissent_ratio: float | None = Field(default=None, ge=0, le=1)
    stale_ratio: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _kind_fits(self) -> AlertRecord:
        if self.kind == "conflict_spike":
            if self.status not in ("firing", "resolved"):
                raise ValueError("a conflict_spike alert is `firing` or `resolved`")
            if self.count is None or self.expected is None or self.p_value is None:
                raise ValueError("a conflict_spike alert carries count, expected and p_value")
        else:
            if self.status in ("firing", "resolved"):
                raise ValueError("a replica_lag alert is `ok`, `lagging`, `stalled` or `silent`")
            if self.source is None:
                raise ValueError("a replica_lag alert names its `source`")
        return self
