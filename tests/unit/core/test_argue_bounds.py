"""Verdict requests at and past their bounds, failures confined to one request, bounded clocks."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any

import claimwatch.core.argue.records as verdicts_module
import pytest
from claimwatch.core.argue import Bounds, Framework, SearchLimit, VerdictArgument, decide
from claimwatch.core.argue.decide import AttackRule, VerdictOutcome
from claimwatch.core.argue.semantics import Semantics, extensions
from claimwatch.core.argue.verdicts import (
    MAX_CLOCK_US,
    VerdictConfig,
    VerdictLimits,
    VerdictRunner,
)
from claimwatch.models.policy import Policy
from claimwatch.models.verdict import VerdictDecision, VerdictSignal

from tests.support.clocks import SECOND, T0
from tests.support.verdicts import BASELINE, PII, POLICY, many, signal_obj

YEAR = 365 * 24 * 3600 * SECOND
#: a policy whose `noise` arguments all attack each other: attacks grow with the square
NOISY: dict[str, Any] = copy.deepcopy(POLICY)
NOISY["argumentation"]["attack_rules"].append(
    {"attacker_kind": "noise", "attacked_kind": "noise", "type": "rebut"}
)


def _config(policy: dict[str, Any] = POLICY, **limits: Any) -> VerdictConfig:
    return VerdictConfig.from_policy(Policy.model_validate(policy), VerdictLimits(**limits))


def _signal(argument: VerdictArgument, at_us: int, request: str = "req-1") -> VerdictSignal:
    return VerdictSignal.model_validate(signal_obj(argument, at_us, request))


def _feed(runner: VerdictRunner, arguments: Sequence[VerdictArgument], request: str) -> list[Any]:
    out: list[Any] = []
    for i, argument in enumerate(arguments):
        out += runner.on_signal(_signal(argument, T0 + i * 1000, request))
    return out


# ---------------------------------------------------------------- signals per request


def test_one_signal_past_the_count_bound_decides_the_request_undecided() -> None:
    """With max_signals 4 the fifth distinct signal decides the request at once, with the bound."""
    runner = VerdictRunner(_config(max_signals=4))
    out = _feed(runner, many(7), "r1")
    assert 1 == len(out)
    record = VerdictDecision.model_validate(out[0])
    assert ("undecided", "escalate", 4) == (record.decision, record.action, len(record.arguments))
    assert record.reason.startswith("the request has more than 4 signals, the limit")
    assert {} == runner.requests["r1"].signals  # a decided request keeps its id only
    assert 3 == runner.requests["r1"].dropped


def test_signals_past_the_byte_bound_decide_the_request_undecided() -> None:
    """Signals whose stored size passes max_request_bytes decide the request with the bound."""
    runner = VerdictRunner(_config(max_request_bytes=4096))
    out = _feed(runner, many(5, claim="y" * 1500), "r1")
    assert ["undecided"] == [d["decision"] for d in out]
    assert "over the limit of 4096" in out[0]["reason"]
    assert 2 == len(out[0]["arguments"])


@pytest.mark.parametrize(
    "limits", [{"max_signals": 0}, {"max_signals": 33}, {"max_request_bytes": 10}]
)
def test_limits_outside_their_ceilings_are_refused(limits: dict[str, int]) -> None:
    """The configurable bounds cannot be set past what keeps a decision below 1 MB."""
    with pytest.raises(ValueError, match="max_"):
        VerdictLimits(**limits)


def test_work_at_twice_the_bound_is_the_work_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deciding 2N signals costs what N cost: the attacks built are counted, not timed.

    N all-attacking arguments make N*(N-1) attacks; past the bound the extra signals are
    dropped without being added, so the framework stays at the bound.
    """
    built: list[int] = []
    real = verdicts_module.decide

    def counting(arguments: Sequence[VerdictArgument], *rest: Any) -> VerdictOutcome:
        verdict = real(arguments, *rest)
        built.append(len(verdict.attacks))
        return verdict

    monkeypatch.setattr(verdicts_module, "decide", counting)
    cap = 16
    costs = []
    for n in (cap, 2 * cap, 8 * cap):
        built.clear()
        runner = VerdictRunner(_config(NOISY, max_signals=cap))
        _feed(runner, many(n), f"r{n}")
        runner.on_clock(T0 + 60 * SECOND)
        costs.append(sum(built))
    assert [cap * (cap - 1)] * 3 == costs


# ---------------------------------------------------------------- extensions


def _pairs(count: int) -> Framework:
    """`count` pairs of arguments attacking each other: 3**count complete extensions."""
    names = [f"{side}{i}" for i in range(count) for side in "ab"]
    attacks = [(f"a{i}", f"b{i}") for i in range(count)] + [
        (f"b{i}", f"a{i}") for i in range(count)
    ]
    return Framework.build(names, attacks)


@pytest.mark.parametrize("semantics", [Semantics.COMPLETE, Semantics.PREFERRED, Semantics.STABLE])
def test_exponentially_many_extensions_meet_the_bound_quickly(semantics: Semantics) -> None:
    """16 independent pairs have 2**16 preferred and 3**16 complete extensions: bounded."""
    started = time.perf_counter()
    with pytest.raises(SearchLimit, match=f"more than 16 {semantics}"):
        extensions(_pairs(16), semantics, Bounds(max_extensions=16))
    assert time.perf_counter() - started < 5.0  # unbounded, complete takes hours


def test_a_bounded_search_answers_undecided_with_the_bound() -> None:
    """`decide` under a bound too small for the framework is undecided, naming the bound."""
    arguments = [VerdictArgument(n, n, "noise", "x", 0.5, "allow") for n in _pairs(6).names]
    rules = [AttackRule("noise", "noise", "rebut")]
    verdict = decide(arguments, rules, Semantics.PREFERRED, Bounds(max_extensions=4))
    assert ("undecided", [], []) == (verdict.decision, verdict.extensions, verdict.accepted)
    assert verdict.reason.startswith("more than 4 preferred extensions")


def test_small_frameworks_are_not_limited() -> None:
    """Below the bounds every semantics gives what it gave without them."""
    framework = _pairs(2)  # 9 complete, 4 preferred and stable extensions
    for semantics in Semantics:
        assert extensions(framework, semantics) == extensions(framework, semantics, Bounds())


# ---------------------------------------------------------------- failures confined


def test_a_request_whose_deciding_raises_is_answered_and_the_others_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A poison request is decided undecided with internal_error; the rest are decided."""
    real = verdicts_module.decide

    def poisoned(arguments: Sequence[VerdictArgument], *rest: Any) -> VerdictOutcome:
        if any(a.id == "poison" for a in arguments):
            raise ZeroDivisionError("poisoned")
        return real(arguments, *rest)

    monkeypatch.setattr(verdicts_module, "decide", poisoned)
    runner = VerdictRunner(_config())
    poison = VerdictArgument("poison", "opa", "baseline", "x", 0.3, "allow")
    out = runner.on_signal(_signal(PII, T0, "before"))
    out += runner.on_signal(_signal(poison, T0, "bad"))
    out += runner.on_signal(_signal(PII, T0 + SECOND, "bad"))  # complete: deciding raises
    out += runner.on_signal(_signal(BASELINE, T0 + SECOND, "before"))
    out += runner.on_signal(_signal(BASELINE, T0 + SECOND, "after"))
    out += runner.on_clock(T0 + 10 * SECOND)
    by_id = {d["request_id"]: VerdictDecision.model_validate(d) for d in out}
    assert ["after", "bad", "before"] == sorted(by_id)
    bad = by_id["bad"]
    assert ("undecided", "escalate") == (bad.decision, bad.action)
    assert "internal_error: ZeroDivisionError: poisoned" == bad.reason
    # the others time out as usual (the upload type waits for a third check)
    assert [True, True] == [by_id["before"].timed_out, by_id["after"].timed_out]
    assert [("bad", "poisoned")] == [(rid, str(exc)) for rid, exc in runner.quarantined]
    assert [] == runner.on_signal(_signal(poison, T0 + 11 * SECOND, "bad"))  # stays decided


def test_a_request_whose_deadline_raises_leaves_the_tick_to_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two requests due at one tick: the poison one is quarantined, the other decided."""
    real = verdicts_module.decide

    def poisoned(arguments: Sequence[VerdictArgument], *rest: Any) -> VerdictOutcome:
        if any(a.id == "poison" for a in arguments):
            raise RecursionError("deep")
        return real(arguments, *rest)

    monkeypatch.setattr(verdicts_module, "decide", poisoned)
    runner = VerdictRunner(_config())
    runner.on_signal(_signal(VerdictArgument("poison", "opa", "b", "x", 0.1, "deny"), T0, "p"))
    runner.on_signal(_signal(BASELINE, T0, "q"))
    out = runner.on_clock(T0 + 6 * SECOND)
    assert {"p": "internal_error: RecursionError: deep", "q": None} == {
        d["request_id"]: (d["reason"] if d["reason"].startswith("internal") else None) for d in out
    }


# ---------------------------------------------------------------- clocks


def test_a_signal_ten_years_ahead_is_refused_and_later_requests_are_decided() -> None:
    """A signal beyond the clock plus clock_skew moves nothing and is listed refused.

    Before the bound, the forged signal moved the clock ten years on: the later request's
    deadline lay ten years ahead and no tick ever reached it.
    """
    runner = VerdictRunner(_config())
    runner.on_signal(_signal(BASELINE, T0, "genuine-0"))
    out = runner.on_signal(_signal(PII, T0 + 10 * YEAR + 931_034, "forged"))
    assert ([], T0) == (out, runner.clock_us)
    runner.on_signal(_signal(BASELINE, T0 + SECOND, "genuine-1"))
    out = runner.on_clock(T0 + 20 * SECOND)
    decided = {d["request_id"]: VerdictDecision.model_validate(d) for d in out}
    assert ["forged", "genuine-0", "genuine-1"] == sorted(decided)
    forged = decided["forged"]
    assert ["pii_moderate"] == [r.id for r in forged.refused]
    assert forged.refused[0].reason.startswith("ahead_of_clock: observed 3650d")
    assert "1 signal(s) refused: pii_moderate" in forged.reason


def test_a_signal_past_the_ceiling_is_refused_on_a_fresh_clock() -> None:
    """With no clock yet, the wall clock plus skew (the ceiling) still bounds a signal."""
    runner = VerdictRunner(_config())
    out = runner.on_signal(_signal(PII, T0 + YEAR, "forged"), ceiling_us=T0 + 5 * SECOND)
    assert ([], T0) == (out, runner.clock_us)
    assert "ahead_of_clock" in runner.requests["forged"].refused["pii_moderate"]


def test_a_clock_never_passes_the_last_representable_time() -> None:
    """A tick at the int64 limit stops the clock at 9999-12-31, so records still render."""
    runner = VerdictRunner(_config())
    runner.on_signal(_signal(BASELINE, T0, "r"))
    out = runner.on_clock(2**63 - 1)
    assert (MAX_CLOCK_US, ["2026-09-14T09:00:05Z"]) == (
        runner.clock_us,
        [d["decided_at"] for d in out],
    )
