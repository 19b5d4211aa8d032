"""The verdicts stream step: per request, collect check signals, decide when complete or late."""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schemas.durations import format_duration
from schemas.policy import Policy
from schemas.verdict import VerdictSignal
from streams.core.argue.decide import ACTIONS, AttackRule, VerdictArgument, decide
from streams.core.argue.framework import name_key
from streams.core.argue.semantics import Semantics
from streams.core.plain import Plain, fields_of
from streams.core.timeutil import format_rfc3339, parse_rfc3339


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

    @classmethod
    def from_policy(cls, policy: Policy) -> VerdictConfig:
        """Compile a validated policy."""
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
        )

    def expected_for(self, request_type: str | None) -> tuple[str, ...]:
        """The checks a request of this type waits for: its list, else the `*` list, else none."""
        if self.expected_by_type and request_type is not None and request_type in self.expected:
            return self.expected[request_type]
        return self.expected.get("*", ())


@dataclass(slots=True)
class RequestState(Plain):
    """One request: the signals so far (by argument id), its deadline, and whether it is decided."""

    request_id: str
    opened_us: int
    deadline_us: int
    request_type: str | None = None
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
    decided_us: int | None = None
    decision_id: str | None = None
    dropped: int = 0

    def to_obj(self) -> dict[str, Any]:
        """A JSON-able copy (for a table or a checkpoint); signals by argument id."""
        return fields_of(self, signals={k: dict(v) for k, v in sorted(self.signals.items())})


class VerdictProcessor:
    """`step` and `advance` over the state of one request; stateless itself.

    Pure: time is the event clock the caller passes (a signal's `observed_at`, or a partition
    clock moved by ticks), never the wall clock. A request opens with its first signal and is
    decided as soon as every expected check has sent one, or at `opened + timeout` on the
    clock: `undecided` (escalate) when expected checks are still missing then. A decided
    request is kept for `remember`, so late or repeated signals are dropped, not re-decided.
    """

    def __init__(self, config: VerdictConfig) -> None:
        self.config = config

    def step(
        self, state: RequestState | None, signal: VerdictSignal, now_us: int
    ) -> tuple[RequestState | None, list[dict[str, Any]]]:
        """Add one signal at clock time `now_us`; returns the state to keep and the decisions.

        The clock is first advanced (a request past its deadline is decided before the signal
        is looked at). A signal for a decided request, or a repeat of one already held, is
        counted in `dropped`. A different signal for an argument already held replaces it
        when it was observed later.
        """
        state, out = self.advance(state, now_us)
        if state is None:
            state = RequestState(signal.request_id, now_us, now_us + self.config.timeout_us)
        elif state.request_id != signal.request_id:
            raise ValueError(
                f"signal of {signal.request_id!r} given the state of {state.request_id!r}"
            )
        if state.decided_us is not None:
            state.dropped += 1
            return state, out
        entry = _entry(signal)
        held = state.signals.get(entry["id"])
        if held == entry or (held is not None and held["observed_us"] >= entry["observed_us"]):
            state.dropped += 1
            return state, out
        state.signals[entry["id"]] = entry
        if state.request_type is None:
            state.request_type = signal.request_type
        expected = self.config.expected_for(state.request_type)
        if expected and not _missing(state, expected):
            out.append(self._decide(state, now_us, timed_out=False))
        return state, out

    def advance(
        self, state: RequestState | None, now_us: int
    ) -> tuple[RequestState | None, list[dict[str, Any]]]:
        """Move one request to clock time `now_us`: decide it at its deadline, forget it later."""
        out: list[dict[str, Any]] = []
        if state is None:
            return None, out
        if state.decided_us is None and now_us >= state.deadline_us:
            expected = self.config.expected_for(state.request_type)
            timed_out = bool(_missing(state, expected))
            out.append(self._decide(state, state.deadline_us, timed_out=timed_out))
        if state.decided_us is not None and now_us >= state.decided_us + self.config.remember_us:
            return None, out
        return state, out

    def next_due(self, state: RequestState) -> int:
        """The clock time at which `advance` will next change this request."""
        if state.decided_us is None:
            return state.deadline_us
        return state.decided_us + self.config.remember_us

    def _decide(self, state: RequestState, at_us: int, *, timed_out: bool) -> dict[str, Any]:
        record = verdict_record(self.config, state, at_us, timed_out=timed_out)
        state.decided_us, state.decision_id = at_us, record["decision_id"]
        return record


class VerdictRunner:
    """Every open request of one partition, its clock and deadlines; for tests and an agent."""

    def __init__(self, config: VerdictConfig, states: Iterable[RequestState] = ()) -> None:
        self.processor = VerdictProcessor(config)
        self.requests: dict[str, RequestState] = {s.request_id: s for s in states}
        self.clock_us: int | None = None
        self._due = [(self.processor.next_due(s), s.request_id) for s in self.requests.values()]
        heapq.heapify(self._due)

    def on_signal(self, signal: VerdictSignal, now_us: int | None = None) -> list[dict[str, Any]]:
        """A signal moves the clock (to its `observed_at` unless `now_us` is given) and is added."""
        moment = parse_rfc3339(signal.observed_at.isoformat()) if now_us is None else now_us
        out = self.on_clock(moment)
        assert self.clock_us is not None
        rid = signal.request_id
        state, more = self.processor.step(self.requests.get(rid), signal, self.clock_us)
        self._keep(rid, state)
        return out + more

    def on_clock(self, now_us: int) -> list[dict[str, Any]]:
        """Move the clock forward (never back) and settle every deadline it passes, in order."""
        if self.clock_us is None or now_us > self.clock_us:
            self.clock_us = now_us
        out: list[dict[str, Any]] = []
        while self._due and self._due[0][0] <= self.clock_us:
            due, rid = heapq.heappop(self._due)
            state = self.requests.get(rid)
            if state is None or self.processor.next_due(state) != due:
                continue  # superseded entry
            state_after, more = self.processor.advance(state, self.clock_us)
            out += more
            self._keep(rid, state_after)
        return out

    def _keep(self, rid: str, state: RequestState | None) -> None:
        if state is None:
            self.requests.pop(rid, None)
            return
        self.requests[rid] = state
        heapq.heappush(self._due, (self.processor.next_due(state), rid))


def verdict_record(
    config: VerdictConfig, state: RequestState, at_us: int, *, timed_out: bool
) -> dict[str, Any]:
    """The decision record of a request (schemas/verdict.py `VerdictDecision`)."""
    expected = config.expected_for(state.request_type)
    missing = _missing(state, expected)
    entries = [state.signals[k] for k in sorted(state.signals, key=name_key)]
    arguments = [
        VerdictArgument(e["id"], e["check"], e["kind"], e["claim"], e["strength"], e["decision"])
        for e in entries
    ]
    verdict = decide(arguments, config.rules, config.semantics)
    decision, reason = verdict.decision, verdict.reason
    if timed_out:
        decision = "undecided"
        reason = (
            f"timed out after {format_duration(config.timeout_us)} without check(s) "
            f"{', '.join(missing)}; undecided, escalate "
            f"(the arrived checks alone: {verdict.reason})"
        )
    accepted = set(verdict.accepted)
    return {
        "decision_id": _decision_id(config, state, entries, timed_out),
        "request_id": state.request_id,
        "request_type": state.request_type,
        "policy_version": config.policy_version,
        "semantics": verdict.semantics,
        "decision": decision,
        "action": ACTIONS[decision],
        "reason": reason,
        "tie": verdict.tie,
        "timed_out": timed_out,
        "expected_checks": list(expected),
        "missing_checks": missing,
        "accepted": verdict.accepted,
        "extensions": verdict.extensions,
        "arguments": [
            {
                "id": e["id"],
                "check": e["check"],
                "kind": e["kind"],
                "claim": e["claim"],
                "strength": e["strength"],
                "decision": e["decision"],
                "observed_at": format_rfc3339(e["observed_us"]),
                "label": verdict.labels[e["id"]],
                "accepted": e["id"] in accepted,
            }
            for e in entries
        ],
        "attacks": [
            {"attacker": a.attacker, "attacked": a.attacked, "type": a.type}
            for a in verdict.attacks
        ],
        "decided_at": format_rfc3339(at_us),
    }


def _entry(signal: VerdictSignal) -> dict[str, Any]:
    return {
        "id": signal.argument_id(),
        "check": signal.check,
        "kind": signal.kind,
        "claim": signal.claim,
        "strength": signal.strength,
        "decision": signal.decision,
        "observed_us": parse_rfc3339(signal.observed_at.isoformat()),
    }


def _missing(state: RequestState, expected: Iterable[str]) -> list[str]:
    present = {entry["check"] for entry in state.signals.values()}
    return sorted(check for check in expected if check not in present)


def _decision_id(
    config: VerdictConfig, state: RequestState, entries: list[dict[str, Any]], timed_out: bool
) -> str:
    digest = hashlib.sha256()
    for part in (config.policy_version, state.request_id, config.semantics.value, str(timed_out)):
        digest.update(part.encode())
        digest.update(b"\x1f")
    for e in entries:
        fields = (e["id"], e["check"], e["kind"], e["decision"], repr(e["strength"]), e["claim"])
        digest.update(b"\x1e")
        digest.update("\x1f".join(fields).encode())
    return "vrd_" + digest.hexdigest()[:32]
