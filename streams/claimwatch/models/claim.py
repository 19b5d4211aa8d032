"""The claim envelope, wire format v1: one tool result as a claim (docs/wire-format.md)."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, model_validator

from claimwatch.models.policy import KID_PATTERN
from claimwatch.models.statuses import DECIDE_MODES, EVIDENCE_STATUSES, STATUSES, Decide, Status

__all__ = [
    "DECIDE_MODES",
    "EVIDENCE_STATUSES",
    "STATUSES",
    "ClaimEnvelope",
    "Decide",
    "Status",
]


class ClaimEnvelope(BaseModel):
    """What an agent publishes for one tool result; the Kafka message key is `subject|field`."""

    model_config = ConfigDict(extra="allow", title="Claim")

    claim_id: str = Field(min_length=1, max_length=128, description="unique id (idempotency)")
    subject: str = Field(min_length=1, description="the entity, e.g. invoice:INV-1")
    field: str = Field(min_length=1, description="the predicate, e.g. payment_status")
    source: str = Field(
        min_length=1, description="producing service, replica/region after @, e.g. x@eu-west-1"
    )
    observed_at: AwareDatetime = Field(description="RFC 3339 with offset; normalized to UTC")
    status: Status = Field(description="only ok and not_found are evidence")
    value: JsonValue = Field(default=None, description="required when status is ok")
    lineage: str | None = Field(default=None, description="upstream identity; same lineage = one")
    authority: str | None = Field(default=None, description="producer's label, informational")
    confidence: float | None = Field(default=None, ge=0, le=1)
    contract_version: str | None = None
    agent_id: str | None = None
    tool: str | None = None
    trace_id: str | None = None
    decide: Decide | None = Field(
        default=None,
        description="when the fact is decided: `window` (default, null alike) when its decision "
        "window closes; `on_arrival` also at once, on the claims that have arrived (the window "
        "stays open and its close decides as usual, superseding the early decision if it "
        "differs)",
    )
    kid: str | None = Field(
        default=None,
        pattern=KID_PATTERN,
        description="id of the key `signature` was made with (the policy's `signing` key of "
        "that `kid`); signed over like every other key, so it cannot be swapped",
    )
    signature: str | None = Field(
        default=None,
        pattern="^[0-9a-fA-F]{64}$",
        description="hex HMAC-SHA256 of the canonical claim (this object without `signature`, "
        "`kid` included, keys sorted, compact separators, UTF-8); required of the sources the "
        "policy's `signing` covers",
    )

    @model_validator(mode="before")
    @classmethod
    def _ok_needs_value(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("status") == "ok" and "value" not in data:
            raise ValueError("a claim with status ok needs a `value`")
        return data

    def fact_key(self) -> str:
        """The Kafka message key of this claim."""
        return f"{self.subject}|{self.field}"
