"""A check argues about one phase of a call; `run_checks` runs a phase's checks at once.

Every check that runs gives exactly one argument (also when it finds nothing), so a check
is either argued or failed; a failed check's argument is missing, and a request missing
an expected check is undecided. Nothing here decides: the policy's rules do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeVar

from mcp.types import CallToolResult
from pydantic import BaseModel, ValidationError

from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.governance.targets import Mask, Target

log = logging.getLogger(__name__)

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


#: Where a check's keys are described, for errors about them.
CHECK_DOCS: Final = "see docs/gateway-checks.md"

M = TypeVar("M", bound=BaseModel)


async def _outcome(check: Check, call: CallView, budget_s: float) -> Outcome:
    """One check run within min(its timeout, the budget): argued, or failed saying why."""
    seconds = max(0.0, min(check.timeout_s, budget_s))
    started = time.perf_counter()
    argument: Argument | None = None
    error: str | None = None
    try:
        async with asyncio.timeout(seconds):
            argument = await check.argue(call)
    except CheckFailed as exc:
        error = str(exc) or "the check failed without saying why"
    except TimeoutError:
        error = f"no answer within {seconds * 1000:.0f} ms"
    except Exception as exc:
        log.exception("governance check %s failed on %s (%s)", check.name, call.tool, call.phase)
        error = f"internal_error: {type(exc).__name__}: {exc}"
    return Outcome(check.name, argument, error, (time.perf_counter() - started) * 1000)


async def run_checks(checks: Sequence[Check], call: CallView, budget_s: float) -> list[Outcome]:
    """Run all at once, each bounded by min(its timeout, budget); never raises.

    A check that raises CheckFailed fails with its message, one that does not answer in
    time with "no answer within N ms", and one that raises anything else with
    "internal_error: <type>: <message>" (logged with the trace). Outcomes come in
    check-name order.
    """
    ordered = sorted(checks, key=lambda c: c.name)
    return list(await asyncio.gather(*(_outcome(c, call, budget_s) for c in ordered)))


def check_config(model: type[M], name: str, raw: Mapping[str, Any], source: ConfigSource) -> M:
    """`governance.checks.<name>` validated by `model`; PolicyError naming file, line, key.

    A missing key's error says what to write (the field's description); an unknown key's
    lists the keys a check of that kind has.
    """
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        # a misspelt key first: it is why a required one looks missing
        error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    loc = tuple(p for p in error["loc"] if p != "[key]" and not str(p).startswith("function-"))
    reason = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        keys = ", ".join(model.model_fields)
        reason = f"unknown key (a {raw.get('kind')} check has {keys}; {CHECK_DOCS})"
    elif error["type"] == "missing" and len(loc) == 1 and loc[0] in model.model_fields:
        hint = model.model_fields[str(loc[0])].description
        reason = f"missing: {hint}" if hint else "missing"
    raise source.error(("governance", "checks", name, *loc), reason) from None
