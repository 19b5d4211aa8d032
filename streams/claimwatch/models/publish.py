"""Versioned documents: a publish or append request in, one result out.

The contract: docs/conflict-kinds.md#versioned-documents.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PublishRequest(BaseModel):
    """One write to a document; topic `publish`, keyed by path."""

    model_config = ConfigDict(extra="allow", title="PublishRequest")

    path: str = Field(
        min_length=1,
        max_length=512,
        description="document path; '/' allowed inside, not leading, trailing or doubled, "
        "and not ending in 'v/<number>'",
    )
    body: str = Field(description="the whole new body (publish) or the text to add (append)")
    op: Literal["publish", "append"] = "publish"
    expected_version: int | None = Field(
        default=None,
        ge=0,
        description="publish: the version the body was built from (0 for a new document); "
        "required for publish, ignored by append",
    )
    request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="matches the result to the request; a repeated id is applied once",
    )

    @model_validator(mode="after")
    def _publish_needs_a_version(self) -> PublishRequest:
        """A publish names the version its body was built from."""
        if self.op == "publish" and self.expected_version is None:
            raise ValueError("expected_version: required for op publish")
        return self


class PublishResult(BaseModel):
    """The store's answer to one request; topic `publish.results`, keyed by path."""

    model_config = ConfigDict(extra="forbid", title="PublishResult")

    status: Literal["ok", "conflict", "rejected", "error"] = Field(
        description="ok: applied; conflict: expected version not current; rejected: refused "
        "(invalid, or past a limit: see reason); error: handling it failed (see reason)"
    )
    path: str
    version: int = Field(
        ge=0,
        description="ok: the new version; conflict and rejected: the current one "
        "(0 when not known); error: 0",
    )
    content_hash: str | None = Field(
        description="sha256 hex of that version's body (None: the document does not exist)"
    )
    request_id: str
    expected_version: int | None = Field(
        default=None, description="conflict: the version the request expected"
    )
    reason: str | None = Field(
        default=None,
        description="rejected: the limit or the problem; error: `internal_error: <type>: "
        "<message>`",
    )
