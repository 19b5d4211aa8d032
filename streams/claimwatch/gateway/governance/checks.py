"""A check argues about one phase of a call; `run_checks` runs a phase's checks at once.

Every check that runs gives exactly one argument (also when it finds nothing), so a check
is either argued or failed; a failed check's argument is missing, and a request missing
an expected check is undecided. Nothing here decides: the policy's rules do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mcp.types import CallToolResult

from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.governance.targets import Mask, Target

Phase = Literal["arguments", "result"]
Decision = Literal["allow", "deny", "modify"]


@dataclass(frozen=True, slots=True)
class CallView:
    """The call a check looks at, in one phase."""

    tool: str
    server: str | None
    phase: Phase
    arguments: Mapping[str, Any]
    result: CallToolResult | None
    targets: tuple[Target, ...]
    unscannable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Argument:
    """What one check argues: a verdict signal's fields and, for modify, what to mask."""

    kind: str
    claim: str
    strength: float
    decision: Decision
    mask: Mask = field(default_factory=Mask)


class CheckFailed(Exception):
    """The check could not argue; the message says why (OPA down, worker busy, ...)."""


class Check(Protocol):
    """One configured check; `name` is its argument id and its signal's `check`."""

    name: str
    timeout_s: float

    async def argue(self, call: CallView) -> Argument:
        """The check's one argument, or CheckFailed saying why there is none."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one check ended: argued (`argument`) or failed (`error`)."""

    name: str
    argument: Argument | None
    error: str | None
    elapsed_ms: float


@dataclass(frozen=True)
class CheckEnv:
    """What the checks of one gateway share."""

    settings: GatewaySettings
    opa_url: str
    opa_timeout_s: float
    max_scan_bytes: int


async def run_checks(checks: Sequence[Check], call: CallView, budget_s: float) -> list[Outcome]:
    """Run all at once, each bounded by min(its timeout, budget); never raises.

    Outcomes come in check-name order.
    """
    raise NotImplementedError


def build_check(name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv) -> Check:
    """The check `governance.checks.<name>` describes, by its `kind` (pii, opa, trust)."""
    raise NotImplementedError
