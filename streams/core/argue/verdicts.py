"""The verdicts stream step: per request, collect check signals, decide when complete or late."""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from schemas.durations import format_duration
from schemas.policy import Policy
from schemas.verdict import VerdictSignal
from streams.core.argue.decide import ACTIONS, AttackRule, VerdictArgument, decide
from streams.core.argue.framework import name_key
from streams.core.argue.semantics import Bounds, Semantics
from streams.core.plain import Plain, fields_of
from streams.core.timeutil import format_rfc3339, parse_rfc3339


#: Hard ceilings of the configurable bounds: a request's decision record (every argument,
#: every attack between them) stays far below the producer's 1 MB request limit.
MAX_SIGNALS_CEILING: Final = 32
MAX_REQUEST_BYTES_CEILING: Final = 512 * 1024
#: The latest clock time a record can be stamped with (9999-12-31T23:59:59.999999Z).
MAX_CLOCK_US: Final = 253_402_300_799_999_999
#: Longest reason kept for a refused signal.
_REASON_CHARS: Final = 300


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
        state, out = self._open(state, signal, now_us)
        if state.decided_us is not None:
            state.dropped += 1
            return state, out
        entry = _entry(signal)
        held = state.signals.get(entry["id"])
        if held == entry or (held is not None and held["observed_us"] >= entry["observed_us"]):
            state.dropped += 1
            return state, out
        if state.request_type is None:
            state.request_type = signal.request_type
        limit = self._beyond(state, entry, held)
        if limit is not None:
            state.dropped += 1
            state.limit = limit
            out.append(self._decide(state, now_us, timed_out=False))
            return state, out
        state.size += entry_size(entry) - (entry_size(held) if held is not None else 0)
        state.signals[entry["id"]] = entry
        expected = self.config.expected_for(state.request_type)
        if expected and not _missing(state, expected):
            out.append(self._decide(state, now_us, timed_out=False))
        return state, out

    def refuse(
        self, state: RequestState | None, signal: VerdictSignal, now_us: int, reason: str
    ) -> tuple[RequestState | None, list[dict[str, Any]]]:
        """Refuse one signal (e.g. observed too far ahead of the clock) with `reason`.

        The request is opened as for any signal, so it is answered: the refusal is listed in
        its decision (at the timeout, or at once when it is one signal too many).
        """
        state, out = self._open(state, signal, now_us)
        if state.decided_us is not None:
            state.dropped += 1
            return state, out
        if state.request_type is None:
            state.request_type = signal.request_type
        rid = signal.argument_id()
        if rid not in state.refused and state.held() >= self.config.limits.max_signals:
            state.dropped += 1
            state.limit = _count_limit(self.config.limits)
            out.append(self._decide(state, now_us, timed_out=False))
            return state, out
        state.refused[rid] = reason[:_REASON_CHARS]
        return state, out

    def _open(
        self, state: RequestState | None, signal: VerdictSignal, now_us: int
    ) -> tuple[RequestState, list[dict[str, Any]]]:
        """The request of `signal` at clock time `now_us`: advanced, or opened when new."""
        state, out = self.advance(state, now_us)
        if state is None:
            state = RequestState(signal.request_id, now_us, now_us + self.config.timeout_us)
        elif state.request_id != signal.request_id:
            raise ValueError(
                f"signal of {signal.request_id!r} given the state of {state.request_id!r}"
            )
        return state, out

    def _beyond(
        self, state: RequestState, entry: dict[str, Any], held: dict[str, Any] | None
    ) -> str | None:
        """The bound this signal would take the request past, if any."""
        limits = self.config.limits
        if held is None and state.held() >= limits.max_signals:
            return _count_limit(limits)
        size = state.size + entry_size(entry) - (entry_size(held) if held is not None else 0)
        if size > limits.max_request_bytes:
            return (
                f"the request's signals would take {size} bytes, over the limit of "
                f"{limits.max_request_bytes} (CLAIMWATCH_VERDICT_MAX_REQUEST_BYTES)"
            )
        return None

    def quarantine(
        self, state: RequestState, at_us: int, exc: Exception
    ) -> tuple[RequestState, dict[str, Any]]:
        """A request whose handling raised: decided `undecided` with the error, state dropped.

        What is kept is the decided request without its signals, so later signals of it are
        dropped for `remember` as for any decided request.
        """
        reason = f"internal_error: {type(exc).__name__}: {exc}"[:2000]
        record = internal_error_record(self.config, state, at_us, reason)
        kept = RequestState(
            state.request_id,
            state.opened_us,
            state.deadline_us,
            state.request_type,
            decided_us=at_us,
            decision_id=record["decision_id"],
            dropped=state.dropped,
        )
        return kept, record

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
        # what was decided is in the record: the remembered request keeps its id only
        state.signals, state.refused, state.size = {}, {}, 0
        return record


class VerdictRunner:
    """Every open request of one partition, its clock and deadlines; for tests and an agent.

    Failures are confined to one request: whatever raises while a request is stepped,
    advanced or decided makes that request `undecided` with reason `internal_error: ...`
    (see `VerdictProcessor.quarantine`); the request id and the error are listed in
    `quarantined` for the caller to log and count, and the other requests go on.
    """

    def __init__(self, config: VerdictConfig, states: Iterable[RequestState] = ()) -> None:
        self.processor = VerdictProcessor(config)
        self.requests: dict[str, RequestState] = {s.request_id: s for s in states}
        self.clock_us: int | None = None
        self._due = [(self.processor.next_due(s), s.request_id) for s in self.requests.values()]
        heapq.heapify(self._due)
        #: requests whose handling raised since the caller last cleared it: (id, error)
        self.quarantined: list[tuple[str, Exception]] = []

    def on_signal(
        self, signal: VerdictSignal, now_us: int | None = None, ceiling_us: int | None = None
    ) -> list[dict[str, Any]]:
        """A signal moves the clock (to its `observed_at` unless `now_us` is given) and is added.

        A signal observed more than `clock_skew` ahead of the clock, or past `ceiling_us`
        (the wall clock plus the skew, when the caller knows it), is refused: it moves
        nothing and is listed in its request's decision with the reason.
        """
        observed = parse_rfc3339(signal.observed_at.isoformat())
        refusal = self._ahead(observed, ceiling_us) if now_us is None else None
        rid = signal.request_id
        if refusal is not None:
            if self.clock_us is None and ceiling_us is not None:
                self.on_clock(ceiling_us - self.processor.config.clock_skew_us)
            out = self.on_clock(self.clock_us if self.clock_us is not None else observed)
            at = self._now()
            return out + self._guarded(
                rid, signal, lambda s: self.processor.refuse(s, signal, at, refusal)
            )
        out = self.on_clock(observed if now_us is None else now_us)
        at = self._now()
        return out + self._guarded(rid, signal, lambda s: self.processor.step(s, signal, at))

    def on_clock(self, now_us: int) -> list[dict[str, Any]]:
        """Move the clock forward (never back) and settle every deadline it passes, in order."""
        now_us = min(now_us, MAX_CLOCK_US)
        if self.clock_us is None or now_us > self.clock_us:
            self.clock_us = now_us
        out: list[dict[str, Any]] = []
        while self._due and self._due[0][0] <= self.clock_us:
            due, rid = heapq.heappop(self._due)
            state = self.requests.get(rid)
            if state is None or self.processor.next_due(state) != due:
                continue  # superseded entry
            at = self.clock_us
            out += self._guarded(rid, None, lambda s: self.processor.advance(s, at))
        return out

    def _now(self) -> int:
        assert self.clock_us is not None
        return self.clock_us

    def _ahead(self, observed_us: int, ceiling_us: int | None) -> str | None:
        """Why a signal observed at `observed_us` is refused, or None when it is not."""
        skew = self.processor.config.clock_skew_us
        allowed = format_duration(skew)
        if self.clock_us is not None and observed_us - self.clock_us > skew:
            ahead = format_duration(observed_us - self.clock_us)
            return (
                f"ahead_of_clock: observed {ahead} ahead of the verdicts partition clock "
                f"(allowed skew {allowed})"
            )
        if ceiling_us is not None and observed_us > ceiling_us:
            ahead = format_duration(observed_us - ceiling_us + skew)
            return (
                f"ahead_of_clock: observed {ahead} ahead of the wall clock "
                f"(allowed skew {allowed})"
            )
        return None

    def _guarded(
        self,
        rid: str,
        signal: VerdictSignal | None,
        work: Callable[[RequestState | None], tuple[RequestState | None, list[dict[str, Any]]]],
    ) -> list[dict[str, Any]]:
        """Run one request's step; what it raises decides that request (see the class)."""
        state = self.requests.get(rid)
        try:
            after, out = work(state)
        except Exception as exc:
            at = self._now()
            if state is None:
                kind = signal.request_type if signal is not None else None
                state = RequestState(rid, at, at + self.processor.config.timeout_us, kind)
            after, record = self.processor.quarantine(state, at, exc)
            out = [record]
            self.quarantined.append((rid, exc))
        self._keep(rid, after)
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
    verdict = decide(arguments, config.rules, config.semantics, config.limits.extensions)
    decision, reason = verdict.decision, verdict.reason
    if state.limit is not None:
        decision = "undecided"
        reason = f"{state.limit}; undecided, escalate (the held checks alone: {verdict.reason})"
    elif timed_out:
        decision = "undecided"
        reason = (
            f"timed out after {format_duration(config.timeout_us)} without check(s) "
            f"{', '.join(missing)}; undecided, escalate "
            f"(the arrived checks alone: {verdict.reason})"
        )
    if state.refused:
        reason += f"; {len(state.refused)} signal(s) refused: {', '.join(sorted(state.refused))}"
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
        "refused": [{"id": k, "reason": v} for k, v in sorted(state.refused.items())],
        "decided_at": format_rfc3339(at_us),
    }


def internal_error_record(
    config: VerdictConfig, state: RequestState, at_us: int, reason: str
) -> dict[str, Any]:
    """The decision of a request whose handling raised: `undecided` (escalate), the error."""
    digest = hashlib.sha256()
    for part in (config.policy_version, state.request_id, "internal_error", reason):
        digest.update(part.encode())
        digest.update(b"\x1f")
    return {
        "decision_id": "vrd_" + digest.hexdigest()[:32],
        "request_id": state.request_id,
        "request_type": state.request_type,
        "policy_version": config.policy_version,
        "semantics": config.semantics.value,
        "decision": "undecided",
        "action": ACTIONS["undecided"],
        "reason": reason,
        "tie": False,
        "timed_out": False,
        "expected_checks": list(config.expected_for(state.request_type)),
        "missing_checks": [],
        "accepted": [],
        "extensions": [],
        "arguments": [],
        "attacks": [],
        "refused": [],
        "decided_at": format_rfc3339(at_us),
    }


def entry_size(entry: Mapping[str, Any]) -> int:
    """The bytes one held signal takes in the stored request (its JSON, UTF-8)."""
    return len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode())


def _count_limit(limits: VerdictLimits) -> str:
    return (
        f"the request has more than {limits.max_signals} signals, the limit "
        "(CLAIMWATCH_VERDICT_MAX_SIGNALS)"
    )


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
    if state.limit is not None or state.refused:  # absent from earlier ids: they stay as they were
        for part in (state.limit or "", *sorted(state.refused)):
            digest.update(f"\x1d{part}".encode())
    for e in entries:
        fields = (e["id"], e["check"], e["kind"], e["decision"], repr(e["strength"]), e["claim"])
        digest.update(b"\x1e")
        digest.update("\x1f".join(fields).encode())
    return "vrd_" + digest.hexdigest()[:32]
