"""The governance stage: a `Gate` running each governed phase's checks and applying the verdict.

Per governed phase (a tool's arguments before they are forwarded, its result before the
arbitration hook and the agent): the phase's targets, the checks its request type expects
(the policy's `argumentation.expected_checks`) run at once (`run_checks`), each argued
outcome becomes a verdict signal, the gateway decides the request locally with the core's
code, sends the signals to `<prefix>verdicts` (where the worker decides the same request
with the same id), and applies the decision: pass, mask, or refuse (deny, escalate). A
failed check's argument is missing, which makes the request undecided: never a silent
allow.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult

from claimwatch.client.verdicts import VerdictPublisher
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.gate import OPEN, Checked, Gate, Gated
from claimwatch.gateway.governance.checks import (
    Argument,
    CallView,
    Check,
    CheckEnv,
    Outcome,
    Phase,
    run_checks,
)
from claimwatch.gateway.governance.config import GovernanceSettings, parse_governance
from claimwatch.gateway.governance.decide import (
    NO_MASK,
    Applied,
    applied_of,
    local_verdict,
    mask_of,
    signals_of,
)
from claimwatch.gateway.governance.kinds import build_check
from claimwatch.gateway.governance.notes import phase_note, refused, with_notes
from claimwatch.gateway.governance.record import Recorded, VerdictRecorder
from claimwatch.gateway.governance.targets import (
    Mask,
    Span,
    argument_targets,
    masked_arguments,
    masked_result,
    result_targets,
)

log = logging.getLogger(__name__)

#: The applied decisions that let the call go on.
PASSING: frozenset[Applied] = frozenset({"passed", "masked", "escalated_passed"})


def wall_us() -> int:
    """The wall clock in microseconds since the epoch (a signal's `observed_at`)."""
    return int(time.time() * 1_000_000)


@dataclass(frozen=True)
class PhaseDecision:
    """One phase decided: the record, how the checks ended, and what to apply."""

    record: dict[str, Any]
    outcomes: list[Outcome]
    arguments: dict[str, Argument]
    mask: Mask
    applied: Applied
    recorded: Recorded

    @property
    def passes(self) -> bool:
        return self.applied in PASSING

    @property
    def why(self) -> str | None:
        """Why a decision was not applied as decided (a modify with nothing to mask)."""
        return NO_MASK if self.record["decision"] == "modify" and self.mask.empty() else None

    def note(self, phase: Phase, masked: list[tuple[Span, str]]) -> dict[str, Any]:
        return phase_note(
            self.record,
            self.outcomes,
            phase=phase,
            applied=self.applied,
            masked=masked,
            recorded=self.recorded,
            why=self.why,
        )


class Governance:
    """The gate of a gateway with `governance:`: governs the tools with `checks:`."""

    def __init__(
        self,
        config: VerdictConfig,
        phases: Mapping[str, Mapping[Phase, str]],
        checks: Mapping[str, Check],
        settings: GovernanceSettings,
        recorder: VerdictRecorder,
        clock: Callable[[], int] = wall_us,
    ) -> None:
        self.config, self.settings, self.recorder = config, settings, recorder
        self.phases = {tool: dict(by_phase) for tool, by_phase in phases.items()}
        self.checks = dict(checks)
        self._clock = clock

    def governs(self, tool: str) -> bool:
        return tool in self.phases

    async def on_arguments(self, tool: str, server: str | None, arguments: dict[str, Any]) -> Gated:
        request_type = self.phases[tool].get("arguments")
        if request_type is None:
            return Gated(arguments)
        view = CallView(tool, server, "arguments", arguments, None, argument_targets(arguments))
        decided = await self._phase(view, request_type)
        if not decided.passes:
            note = decided.note("arguments", [])
            refusal = refused(tool, {"arguments": note}, "arguments")
            return Gated(arguments, refused=refusal, note=note)
        if decided.applied != "masked":
            return Gated(arguments, note=decided.note("arguments", []))
        sent, spans = masked_arguments(arguments, decided.mask)
        by = _attributed(spans, decided, lambda m: masked_arguments(arguments, m)[1])
        return Gated(sent, note=decided.note("arguments", by))

    async def on_result(
        self, tool: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked:
        notes: dict[Phase, Mapping[str, Any]] = {}
        if gated.note is not None:
            notes["arguments"] = gated.note
        request_type = self.phases[tool].get("result")
        if request_type is None:
            return Checked(with_notes(result, tool, notes))
        targets, unscannable = result_targets(result)
        view = CallView(tool, server, "result", gated.arguments, result, targets, unscannable)
        decided = await self._phase(view, request_type)
        if not decided.passes:
            notes["result"] = decided.note("result", [])
            return Checked(refused(tool, notes, "result"), passed=False)
        if decided.applied == "masked":
            original = result
            result, spans = masked_result(original, decided.mask)
            by = _attributed(spans, decided, lambda m: masked_result(original, m)[1])
            notes["result"] = decided.note("result", by)
        else:
            notes["result"] = decided.note("result", [])
        return Checked(with_notes(result, tool, notes))

    async def _phase(self, view: CallView, request_type: str) -> PhaseDecision:
        """Run the phase's checks, decide, record, and say what to apply."""
        checks = [self.checks[name] for name in self.config.expected_for(request_type)]
        outcomes = await run_checks(checks, view, self.settings.timeout_s)
        at_us = self._clock()
        request_id = f"gw-{uuid.uuid4().hex}-{view.phase}"
        signals = signals_of(
            outcomes,
            request_id=request_id,
            request_type=request_type,
            tool=view.tool,
            phase=view.phase,
            at_us=at_us,
        )
        record = local_verdict(self.config, request_id, request_type, signals, at_us)
        recorded = await self.recorder.record(signals)
        arguments = {o.name: o.argument for o in outcomes if o.argument is not None}
        mask = mask_of(record, arguments)
        applied = applied_of(
            record, self.settings.on_undecided, mask if record["decision"] == "modify" else None
        )
        return PhaseDecision(record, outcomes, arguments, mask, applied, recorded)

    async def aclose(self) -> None:
        """Close every check (their HTTP sessions) and the recorder (its publisher, outbox).

        One that fails to close is logged; the others are closed all the same.
        """
        for check in self.checks.values():
            try:
                await check.aclose()
            except Exception:
                log.exception("governance check %s did not close cleanly", check.name)
        await self.recorder.aclose()


def _attributed(
    spans: list[Span], decided: PhaseDecision, spans_of: Callable[[Mask], list[Span]]
) -> list[tuple[Span, str]]:
    """Each replaced span with the first accepted modify argument whose own mask covers it."""
    own = {
        name: spans_of(argument.mask)
        for name, argument in sorted(decided.arguments.items())
        if argument.decision == "modify" and name in decided.record["accepted"]
    }
    return [(span, _owner(span, own)) for span in spans]


def _owner(span: Span, own: Mapping[str, list[Span]]) -> str:
    for name, theirs in own.items():
        if any(
            s.pointer == span.pointer and s.start <= span.end and span.start <= s.end
            for s in theirs
        ):
            return name
    return ", ".join(own)  # merged from several masks: every accepted one named


def build_gate(
    raw: Mapping[str, Any] | None,
    tools_raw: Mapping[str, Any],
    source: ConfigSource,
    settings: GatewaySettings,
) -> Gate:
    """OPEN when nothing is governed; else the stage (PolicyError naming file, line, key)."""
    governed = parse_governance(raw, tools_raw, source)
    if governed is None:
        return OPEN
    env = CheckEnv(settings, governed.opa_url, governed.opa_timeout_s, governed.max_scan_bytes)
    checks = {
        name: build_check(name, check, source, env) for name, check in governed.checks_raw.items()
    }
    recorder = VerdictRecorder(
        lambda: VerdictPublisher(settings.bootstrap, settings.topic_prefix),
        timeout_s=governed.settings.record_timeout_s,
    )
    return Governance(governed.config, governed.phases, checks, governed.settings, recorder)
