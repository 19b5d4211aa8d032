"""A verdict request as the stream step keeps it: the policy compiled, bounds, the state."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from claimwatch.core.argue.decide import AttackRule
from claimwatch.core.argue.semantics import Bounds, Semantics
from claimwatch.core.plain import Plain, fields_of
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.policy import Policy
from claimwatch.models.verdict import VerdictSignal

#: Hard ceilings of the configurable bounds: a request's decision record (every argument,
#: every attack between them) stays far below the producer's 1 MB request limit.
MAX_SIGNALS_CEILING: Final = 32
MAX_REQUEST_BYTES_CEILING: Final = 512 * 1024
#: The latest clock time a record can be stamped with (9999-12-31T23:59:59.999999Z).
MAX_CLOCK_US: Final = 253_402_300_799_999_999
#: Longest reason kept for a refused signal.
REASON_CHARS: Final = 300


@dataclass(frozen=True, slots=True)
class VerdictLimits:
    """What one request may hold: signals (count and bytes) and the work of deciding it.

    Beyond either signal bound the request is decided at once, `undecided` with the bound
    in its reason; beyond the extension bounds (complete, preferred, stable semantics) it is
    `undecided` too. Never a crash, never a silent allow.
    """

    max_signals: int = 16
    max_request_bytes: int = 256 * 1024
    extensions: Bounds = field(default_factory=Bounds)

    def __post_init__(self) -> None:
        if not 1 <= self.max_signals <= MAX_SIGNALS_CEILING:
            raise ValueError(f"max_signals: {self.max_signals} is not in 1..{MAX_SIGNALS_CEILING}")
        if not 1024 <= self.max_request_bytes <= MAX_REQUEST_BYTES_CEILING:
            raise ValueError(
                f"max_request_bytes: {self.max_request_bytes} is not in "
                f"1024..{MAX_REQUEST_BYTES_CEILING}"
            )


@dataclass(frozen=True, slots=True)
class VerdictConfig:
    """The policy's `argumentation` section, compiled for the stream step."""

    policy_version: str
    rules: tuple[AttackRule, ...]
    expected: Mapping[str, tuple[str, ...]]
    expected_by_type: bool
    timeout_us: int
    remember_us: int
    semantics: Semantics
    #: a signal observed more than this ahead of the partition clock is refused
    clock_skew_us: int = 5_000_000
    limits: VerdictLimits = field(default_factory=VerdictLimits)

    @classmethod
    def from_policy(cls, policy: Policy, limits: VerdictLimits | None = None) -> VerdictConfig:
        """Compile a validated policy (with the default limits unless given)."""
        section = policy.argumentation
        raw = section.expected_checks
        by_type = isinstance(raw, dict)
        expected = (
            {k: tuple(sorted(set(v))) for k, v in raw.items()}
            if isinstance(raw, dict)
            else {"*": tuple(sorted(set(raw)))}
        )
        rules = tuple(
            AttackRule(r.attacker_kind, r.attacked_kind, r.type) for r in section.attack_rules
        )
        return cls(
            policy_version=policy.policy_version,
            rules=rules,
            expected=expected,
            expected_by_type=by_type,
            timeout_us=section.timeout,
            remember_us=section.remember,
            semantics=Semantics(section.semantics),
            clock_skew_us=policy.defaults.clock_skew,
            limits=limits if limits is not None else VerdictLimits(),
        )

    def expected_for(self, request_type: str | None) -> tuple[str, ...]:
        """The checks a request of this type waits for: its list, else the `*` list, else none."""
        if self.expected_by_type and request_type is not None and request_type in self.expected:
            return self.expected[request_type]
        return self.expected.get("*", ())


@dataclass(slots=True)
class RequestState(Plain):
    """One request: the signals so far (by argument id), its deadline, and whether it is decided.

    `refused` holds the signals refused on arrival (by argument id, with the reason), `size`
    the encoded bytes of the signals held, `limit` the bound that decided the request (if
    one did). A decided request keeps neither signals nor refusals: only its decision id.
    """

    request_id: str
    opened_us: int
    deadline_us: int
    request_type: str | None = None
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
    decided_us: int | None = None
    decision_id: str | None = None
    dropped: int = 0
    refused: dict[str, str] = field(default_factory=dict)
    size: int = 0
    limit: str | None = None

    def to_obj(self) -> dict[str, Any]:
        """A JSON-able copy (for a table or a checkpoint); signals by argument id."""
        return fields_of(self, signals={k: dict(v) for k, v in sorted(self.signals.items())})

    def held(self) -> int:
        """How many signals the request holds, taken and refused."""
        return len(self.signals) + len(self.refused)


def entry_size(entry: Mapping[str, Any]) -> int:
    """The bytes one held signal takes in the stored request (its JSON, UTF-8)."""
    return len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode())


def count_limit(limits: VerdictLimits) -> str:
    return (
        f"the request has more than {limits.max_signals} signals, the limit "
        "(CLAIMWATCH_VERDICT_MAX_SIGNALS)"
    )


def signal_entry(signal: VerdictSignal) -> dict[str, Any]:
    return {
        "id": signal.argument_id(),
        "check": signal.check,
        "kind": signal.kind,
        "claim": signal.claim,
        "strength": signal.strength,
        "decision": signal.decision,
        "observed_us": parse_rfc3339(signal.observed_at.isoformat()),
    }


def missing_checks(state: RequestState, expected: Iterable[str]) -> list[str]:
    present = {entry["check"] for entry in state.signals.values()}
    return sorted(check for check in expected if check not in present)
