"""The `trust` check: a fact's current decision in claimwatch, as an argument.

The check fills its subject template from the call (`domain:{url|host}`), asks a worker's
fact page for that fact's decision, and argues what the configured `values` say for the
value it resolved to. Everything short of a resolved, mapped value (no decision, a
conflict, too little evidence, every claim rejected, a value without a mapping) argues
`otherwise`: the knowledge a team keeps is used only once it has itself been decided. A
worker that cannot answer (unreachable, not ready, busy, too slow) makes the check fail,
so its argument is missing and the request is undecided. See docs/gateway-checks.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from claimwatch.client.facts import (
    Answer,
    FactPages,
    WorkerBusy,
    WorkerUnavailable,
    checked_worker_url,
)
from claimwatch.client.mcp_adapter import (
    MappingError,
    checked_subject,
    fill_subject,
    result_payload,
)
from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance.checks import (
    Argument,
    CallView,
    CheckEnv,
    CheckFailed,
    check_config,
)
from claimwatch.gateway.opened import OpenedOnUse
from claimwatch.models.durations import US_PER_S, Duration

#: The longest claim a verdict signal carries.
MAX_CLAIM: Final = 4096


class Argued(BaseModel):
    """What the check argues for one answer: `{decision, kind, strength}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["allow", "deny"] = Field(
        description="allow or deny (a trust record names nothing to mask)"
    )
    kind: str = Field(min_length=1, description="the argument kind the attack rules name")
    strength: float = Field(ge=0, le=1)


class TrustConfig(BaseModel):
    """`governance.checks.<name>` of kind `trust`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["trust"]
    subject: str = Field(
        min_length=1,
        description="the fact's subject, a template filled from the call, e.g. domain:{url|host}",
    )
    field: str = Field(min_length=1, description="the fact's field, e.g. trust")
    values: dict[str, Argued] = Field(default_factory=dict)
    otherwise: Argued = Field(
        description="say what a subject without a mapped decision argues, e.g. "
        "{decision: allow, kind: trust_unknown, strength: 0}"
    )
    timeout: Duration = 1 * US_PER_S

    @field_validator("subject")
    @classmethod
    def _template(cls, subject: str) -> str:
        return checked_subject(subject)


def _short(decision: Mapping[str, Any]) -> str:
    """A decision id as claims name it: `9c1e2f3a…`."""
    return f"{str(decision.get('decision_id', '?'))[:12]}…"


def _winner_source(decision: Mapping[str, Any]) -> str | None:
    """The source of the decision's winning claim, if it names one."""
    claims = decision.get("claims")
    for claim in claims if isinstance(claims, list) else ():
        if isinstance(claim, Mapping) and claim.get("disposition") == "won":
            source = claim.get("source")
            return str(source) if source is not None else None
    return None


class TrustCheck:
    """One configured `trust` check; its fact pages are opened on first use."""

    def __init__(self, name: str, config: TrustConfig, worker_url: str) -> None:
        self.name = name
        self.config = config
        self.timeout_s = config.timeout / US_PER_S
        self.worker_url = worker_url
        self._pages = OpenedOnUse(lambda: FactPages(worker_url))

    @classmethod
    def from_config(
        cls, name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv
    ) -> TrustCheck:
        config = check_config(TrustConfig, name, raw, source)
        try:
            url = checked_worker_url(env.settings.worker_url)
        except ValueError as exc:
            raise source.error(("governance", "checks", name), str(exc)) from None
        return cls(name, config, url)

    async def pages(self) -> FactPages:
        """The check's fact pages, opened once."""
        return await self._pages.get()

    def subject(self, call: CallView) -> str:
        """The fact's subject: the template filled from the arguments, then the result."""
        payload = result_payload(call.result) if call.result is not None else None
        try:
            return fill_subject(self.config.subject, call.arguments, payload or {})
        except MappingError as exc:
            raise CheckFailed(str(exc)) from None

    async def argue(self, call: CallView) -> Argument:
        subject = self.subject(call)
        pages = await self.pages()
        try:
            answer = await pages.ask(subject, self.config.field)
        except (WorkerUnavailable, WorkerBusy) as exc:
            raise CheckFailed(str(exc)) from None
        except ValueError as exc:  # the worker refused the query (400)
            raise CheckFailed(str(exc)) from None
        return self.argument(subject, answer)

    def argument(self, subject: str, answer: Answer) -> Argument:
        """The argument of a fact page's answer (section "trust records" of the docs)."""
        fact = f"{subject} {self.config.field}"
        decision = answer.decision
        if answer.status == 404 or decision is None:
            if answer.status != 404:
                raise CheckFailed(f"the worker answered {answer.status} without a decision")
            return self._argued(self.config.otherwise, f"{fact}: no decision (no claim about it)")
        outcome = decision.get("outcome")
        if outcome != "resolved":
            return self._argued(self.config.otherwise, f"{fact}: {outcome} ({_short(decision)})")
        value = decision.get("canonical")
        if not isinstance(value, str) or value not in self.config.values:
            value = decision.get("value")
        mapped = self.config.values.get(str(value)) if value is not None else None
        if mapped is None:
            shown = "absent" if value is None else str(value)
            claim = f"{fact}: resolved {shown}, not mapped ({_short(decision)})"
            return self._argued(self.config.otherwise, claim)
        source = _winner_source(decision)
        origin = f", from {source}" if source else ""
        return self._argued(mapped, f"{fact} is {value} (decision {_short(decision)}{origin})")

    @staticmethod
    def _argued(argued: Argued, claim: str) -> Argument:
        return Argument(argued.kind, claim[:MAX_CLAIM], argued.strength, argued.decision)

    async def aclose(self) -> None:
        await self._pages.close()
