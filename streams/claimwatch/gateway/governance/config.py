"""The gateway file's `governance:` section and its tools' `checks:`, checked at start-up.

    governance:
      policy: policy.yaml          # the worker's policy, relative to the gateway file
      opa: {url: http://127.0.0.1:8181, timeout: 500ms}
      timeout: 2s                  # all checks of one phase together
      on_undecided: deny           # or annotate
      record_timeout: 1s           # the longest a phase waits for its signals to reach Kafka
      max_scan_bytes: 1048576
      checks: {pii: {kind: pii, ...}, opa_pii: {kind: opa, package: ...}, ...}
    tools:
      fetch_page: {checks: {result: web_content}}     # phase -> the policy's request type

Which checks a request needs is the policy's (`argumentation.expected_checks` by request
type); this section says how each named check runs. Every error names the file, the line
and the key (`ConfigSource.error`), or the policy file and its key: the gateway does not
start with a request type the policy lacks, a check it does not define, or more checks
than a request may hold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claimwatch.core.argue.request import VerdictConfig, VerdictLimits
from claimwatch.gateway.config import ConfigSource, http_url
from claimwatch.gateway.governance.checks import Phase
from claimwatch.gateway.governance.decide import OnUndecided
from claimwatch.gateway.tools_config import GOVERNANCE_KEY
from claimwatch.models.durations import US_PER_S, Duration
from claimwatch.policy.loading import load_policy
from claimwatch.policy.source import PolicyError

#: The OPA server asked when neither `opa.url` nor CLAIMWATCH_OPA_URL names one.
DEFAULT_OPA_URL: Final = "http://127.0.0.1:8181"
_DOCS: Final = "see docs/gateway-governance.md"


def env_opa_url() -> str:
    """The OPA URL from `CLAIMWATCH_OPA_URL`, else `DEFAULT_OPA_URL`."""
    return os.environ.get("CLAIMWATCH_OPA_URL") or DEFAULT_OPA_URL


class OpaSection(BaseModel):
    """Where the OPA server is, and how long one query may take."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(default=None, description="default: CLAIMWATCH_OPA_URL, else local")
    timeout: Duration = Field(default=500_000, gt=0, description="one query")

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return http_url(url, DEFAULT_OPA_URL)


class GovernanceFile(BaseModel):
    """The `governance:` section's keys; each check's own keys are its kind's (`build_check`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: str = Field(min_length=1, description="the worker's policy file")
    opa: OpaSection = Field(default_factory=OpaSection)
    timeout: Duration = Field(default=2 * US_PER_S, gt=0, description="all checks of a phase")
    on_undecided: OnUndecided = "deny"
    record_timeout: Duration = Field(default=US_PER_S, gt=0)
    max_scan_bytes: int = Field(default=1 << 20, ge=1)
    checks: dict[str, dict[str, Any]] = Field(min_length=1)


class ToolChecks(BaseModel):
    """A tool's `checks:`: the policy's request type of each governed phase."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    arguments: str | None = Field(default=None, min_length=1)
    result: str | None = Field(default=None, min_length=1)


@dataclass(frozen=True)
class GovernanceSettings:
    """How the stage runs its phases (seconds)."""

    timeout_s: float = 2.0
    on_undecided: OnUndecided = "deny"
    record_timeout_s: float = 1.0


@dataclass(frozen=True)
class Governed:
    """A checked configuration: what the stage is built from."""

    config: VerdictConfig
    phases: dict[str, dict[Phase, str]]
    checks_raw: dict[str, dict[str, Any]]
    settings: GovernanceSettings
    opa_url: str
    opa_timeout_s: float
    max_scan_bytes: int
    policy_path: Path


def parse_governance(
    raw: Mapping[str, Any] | None, tools_raw: Mapping[str, Any], source: ConfigSource
) -> Governed | None:
    """The checked section, None when nothing is governed; PolicyError naming file and key."""
    phases = _phases(tools_raw, source)
    if raw is None:
        if phases:
            tool = next(iter(phases))
            raise source.error(
                ("tools", tool, GOVERNANCE_KEY), "needs the governance: section (policy, checks)"
            )
        return None
    section = _validated(raw, source)
    policy_path = Path(source.path).parent / section.policy
    compiled = load_policy(policy_path)  # its PolicyError names the policy file
    config = VerdictConfig.from_policy(compiled.policy)
    for tool, by_phase in phases.items():
        for phase, request_type in by_phase.items():
            _check_request_type(config, tool, phase, request_type, source, policy_path)
            _check_expected(config, request_type, section.checks, source, policy_path)
    return Governed(
        config=config,
        phases=phases,
        checks_raw=dict(section.checks),
        settings=GovernanceSettings(
            timeout_s=section.timeout / US_PER_S,
            on_undecided=section.on_undecided,
            record_timeout_s=section.record_timeout / US_PER_S,
        ),
        opa_url=section.opa.url or env_opa_url(),
        opa_timeout_s=section.opa.timeout / US_PER_S,
        max_scan_bytes=section.max_scan_bytes,
        policy_path=policy_path,
    )


def _phases(tools_raw: Mapping[str, Any], source: ConfigSource) -> dict[str, dict[Phase, str]]:
    """Each governed tool's request type by phase (tools without `checks:` are left out)."""
    phases: dict[str, dict[Phase, str]] = {}
    for tool, entry in (tools_raw or {}).items():
        if not isinstance(entry, Mapping) or GOVERNANCE_KEY not in entry:
            continue
        where: tuple[str, ...] = ("tools", str(tool), GOVERNANCE_KEY)
        try:
            checks = ToolChecks.model_validate(entry[GOVERNANCE_KEY])
        except ValidationError as exc:
            raise _validation_error(exc, where, source) from None
        by_phase: dict[Phase, str] = {}
        if checks.arguments is not None:
            by_phase["arguments"] = checks.arguments
        if checks.result is not None:
            by_phase["result"] = checks.result
        if not by_phase:
            raise source.error(
                where, "name the request type of `arguments`, of `result`, or of both"
            )
        phases[str(tool)] = by_phase
    return phases


def _validated(raw: Mapping[str, Any], source: ConfigSource) -> GovernanceFile:
    if not isinstance(raw, Mapping):
        reason = f"must be a mapping with `policy` and `checks` ({_DOCS})"
        raise source.error(("governance",), reason)
    try:
        return GovernanceFile.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(exc, ("governance",), source) from None


def _validation_error(
    exc: ValidationError, where: tuple[str, ...], source: ConfigSource
) -> PolicyError:
    """The first error (a misspelt key first: it is why a required one looks missing)."""
    error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    loc = (*where, *(str(p) for p in error["loc"] if not str(p).startswith("function-")))
    reason = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        reason = f"unknown key ({_DOCS} for the keys)"
    elif error["type"] == "missing":
        reason = f"missing ({_DOCS})"
    return source.error(loc, reason)


def _check_request_type(
    config: VerdictConfig,
    tool: str,
    phase: Phase,
    request_type: str,
    source: ConfigSource,
    policy_path: Path,
) -> None:
    if config.expected_for(request_type):
        return
    known = ", ".join(sorted(k for k in config.expected if k != "*")) or "none"
    raise source.error(
        ("tools", tool, GOVERNANCE_KEY, phase),
        f"request type {request_type!r} is not in the policy's argumentation.expected_checks "
        f"({policy_path.name}): known: {known}",
    )


def _check_expected(
    config: VerdictConfig,
    request_type: str,
    checks: Mapping[str, Any],
    source: ConfigSource,
    policy_path: Path,
) -> None:
    expected = config.expected_for(request_type)
    listed = request_type if request_type in config.expected else "*"
    key = f"argumentation.expected_checks.{listed}"
    at = f"{Path(source.path).name}:{source.line(('governance', 'checks'))}"
    for name in expected:
        if name not in checks:
            raise PolicyError(
                str(policy_path),
                None,
                key,
                f"names check {name!r}, which governance.checks does not define ({at})",
            )
    limit = VerdictLimits().max_signals
    if len(expected) > limit:
        raise PolicyError(
            str(policy_path),
            None,
            key,
            f"{len(expected)} checks: a request holds at most {limit} signals",
        )
