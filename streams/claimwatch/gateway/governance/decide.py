"""Deciding one governed phase locally, with the core's own code, as the worker decides it.

The checks' arguments become verdict signals (`signals_of`); the gateway decides them at
once (`local_verdict`) with `claimwatch.core.argue.records.verdict_record`, the function
the worker's verdict step calls, so the agent never waits for Kafka. A request missing an
expected check is decided as the worker decides it at the policy's timeout (`timed_out`,
`undecided`), so the two records carry the same `decision_id`. `applied_of` says what the
decision does to the call, `mask_of` what a `modify` masks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from claimwatch.core.argue.records import verdict_record
from claimwatch.core.argue.request import (
    RequestState,
    VerdictConfig,
    missing_checks,
    signal_entry,
)
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.gateway.governance.checks import Argument, Outcome, Phase
from claimwatch.gateway.governance.targets import Mask
from claimwatch.models.verdict import VerdictSignal

Applied = Literal["passed", "masked", "denied", "escalated_denied", "escalated_passed"]
OnUndecided = Literal["deny", "annotate"]
#: Why a `modify` that names nothing to mask is denied (it cannot be applied).
NO_MASK: Final = "modify was decided but no accepted argument names what to mask"


def signals_of(
    outcomes: Sequence[Outcome],
    *,
    request_id: str,
    request_type: str,
    tool: str,
    phase: Phase,
    at_us: int,
) -> list[VerdictSignal]:
    """One signal per argued outcome, in the outcomes' order; failed checks send nothing.

    The check's name is both the signal's `check` and its argument id. `tool` and `phase`
    ride along as extras (the worker ignores them; a person reading the topic does not).
    """
    observed = format_rfc3339(at_us)
    return [
        VerdictSignal.model_validate(
            {
                "request_id": request_id,
                "request_type": request_type,
                "check": outcome.name,
                "argument": outcome.name,
                "kind": outcome.argument.kind,
                "claim": outcome.argument.claim,
                "strength": outcome.argument.strength,
                "decision": outcome.argument.decision,
                "observed_at": observed,
                "tool": tool,
                "phase": phase,
            }
        )
        for outcome in outcomes
        if outcome.argument is not None
    ]


def local_verdict(
    config: VerdictConfig,
    request_id: str,
    request_type: str,
    signals: Sequence[VerdictSignal],
    at_us: int,
) -> dict[str, Any]:
    """The decision record the worker writes for these signals, stamped `at_us`.

    Missing expected checks make it `timed_out` (the worker decides such a request at its
    timeout with the same signals): the same record but for `decided_at`, the same id.
    """
    entries = [signal_entry(s) for s in signals]
    state = RequestState(
        request_id, at_us, at_us + config.timeout_us, request_type, {e["id"]: e for e in entries}
    )
    missing = missing_checks(state, config.expected_for(request_type))
    return verdict_record(config, state, at_us, timed_out=bool(missing))


def mask_of(record: Mapping[str, Any], arguments: Mapping[str, Argument]) -> Mask:
    """The union of the masks of the accepted arguments that say modify."""
    mask = Mask()
    for entry in record["arguments"]:
        argument = arguments.get(entry["id"])
        if entry["accepted"] and argument is not None and argument.decision == "modify":
            mask = mask.union(argument.mask)
    return mask


def applied_of(
    record: Mapping[str, Any], on_undecided: OnUndecided, mask: Mask | None = None
) -> Applied:
    """What the decision does to the call.

    allow passes, modify masks, deny denies; undecided escalates and is denied unless
    `on_undecided` is `annotate`. A modify whose `mask` is empty cannot be applied and is
    denied (`NO_MASK`); without `mask` a modify is taken as applicable.
    """
    decision = record["decision"]
    if decision == "allow":
        return "passed"
    if decision == "modify":
        return "denied" if mask is not None and mask.empty() else "masked"
    if decision == "deny":
        return "denied"
    return "escalated_passed" if on_undecided == "annotate" else "escalated_denied"
