"""The verdicts stream step: per request, collect check signals, decide when complete or late."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any

from claimwatch.core.argue.records import internal_error_record, verdict_record
from claimwatch.core.argue.request import (
    MAX_CLOCK_US,
    MAX_REQUEST_BYTES_CEILING,
    MAX_SIGNALS_CEILING,
    REASON_CHARS,
    RequestState,
    VerdictConfig,
    VerdictLimits,
    count_limit,
    entry_size,
    missing_checks,
    signal_entry,
)
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.durations import format_duration
from claimwatch.models.verdict import VerdictSignal

__all__ = [
    "MAX_CLOCK_US",
    "MAX_REQUEST_BYTES_CEILING",
    "MAX_SIGNALS_CEILING",
    "RequestState",
    "VerdictConfig",
    "VerdictLimits",
    "VerdictProcessor",
    "VerdictRunner",
    "internal_error_record",
    "verdict_record",
]


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
        entry = signal_entry(signal)
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
        if expected and not missing_checks(state, expected):
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
            state.limit = count_limit(self.config.limits)
            out.append(self._decide(state, now_us, timed_out=False))
            return state, out
        state.refused[rid] = reason[:REASON_CHARS]
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
            return count_limit(limits)
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
            timed_out = bool(missing_checks(state, expected))
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
            out += self._guarded(rid, None, self._advance)
        return out

    def _advance(self, state: RequestState | None) -> tuple[RequestState | None, list[Any]]:
        return self.processor.advance(state, self._now())

    def _now(self) -> int:
        assert self.clock_us is not None
        return self.clock_us

    def _ahead(self, observed_us: int, ceiling_us: int | None) -> str | None:
        """Why a signal observed at `observed_us` is refused, or None when it is not."""
        skew = self.processor.config.clock_skew_us
        allowed = format_duration(skew)
        if self.clock_us is not None and observed_us - self.clock_us > skew:
            ahead = _whole_seconds(observed_us - self.clock_us)
            return (
                f"ahead_of_clock: observed {ahead} ahead of the verdicts partition clock "
                f"(allowed skew {allowed})"
            )
        if ceiling_us is not None and observed_us > ceiling_us:
            ahead = _whole_seconds(observed_us - ceiling_us + skew)
            return (
                f"ahead_of_clock: observed {ahead} ahead of the wall clock (allowed skew {allowed})"
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


def _whole_seconds(us: int) -> str:
    """A distance for humans: whole seconds (rounded down) once it is a second or more."""
    return format_duration(us - us % 1_000_000 if us >= 1_000_000 else us)
