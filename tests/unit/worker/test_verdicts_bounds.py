"""The verdicts edge at its bounds: clocks bounded by broker and wall time, failures confined."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import claimwatch.core.argue.records as verdicts_module
import orjson
import pytest
from claimwatch.core.argue import VerdictArgument
from claimwatch.core.argue.decide import VerdictOutcome
from claimwatch.core.argue.verdicts import VerdictConfig, VerdictLimits
from claimwatch.models.policy import Policy
from claimwatch.models.verdict import VerdictDecision
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.ticks import TICK_KEY, tick_value
from claimwatch.worker.verdicts.edge import CLOCK_PREFIX, REQUEST_PREFIX, VerdictsEdge

from tests.support.clocks import SECOND, T0
from tests.support.verdicts import BASELINE, PII, POLICY, many, signal_obj

NAMES = TopicNames("t.")
PARTITIONS = 1  # every request in partition 0
YEAR = 365 * 24 * 3600 * SECOND
LATE = 1_000_000


def _edge(table: dict[bytes, bytes], wall: int | None = None, **limits: Any) -> VerdictsEdge:
    config = VerdictConfig.from_policy(Policy.model_validate(POLICY), VerdictLimits(**limits))
    clock = (lambda: wall) if wall is not None else None
    return VerdictsEdge(config, NAMES, PARTITIONS, table, LATE, clock)


def _value(argument: VerdictArgument, at_us: int, request: str) -> bytes:
    return orjson.dumps(signal_obj(argument, at_us, request))


def _decided(sends: Sequence[Any]) -> dict[str, VerdictDecision]:
    return {
        o.key.decode(): VerdictDecision.model_validate_json(o.value)
        for o in sends
        if o.topic == NAMES.verdicts_decisions
    }


def test_a_forged_future_signal_is_refused_and_genuine_requests_are_decided() -> None:
    """Broker time moves the clock; a signal ten years ahead is refused, named in its decision."""
    now = T0 + 100 * SECOND
    edge = _edge({}, wall=now)
    out = edge.handle(0, 0, b"forged", _value(PII, now + 10 * YEAR, "forged"), now)
    assert ["verdict_signal", "verdict_refused"] == out.events
    assert now - LATE == edge.runner(0).clock_us
    edge.handle(0, 1, b"genuine", _value(BASELINE, now, "genuine"), now)
    out = edge.handle(0, 2, TICK_KEY, tick_value(now + 9 * SECOND), now + 10 * SECOND)
    decided = _decided(out.sends)
    assert ["forged", "genuine"] == sorted(decided)
    assert ["pii_moderate"] == [r.id for r in decided["forged"].refused]


@pytest.mark.parametrize(
    ("tick", "broker", "wall", "clock", "events"),
    [
        (T0, T0 + 5 * SECOND, None, T0, ["verdict_tick"]),
        (
            T0 + 9 * SECOND,
            T0 + 5 * SECOND,
            None,
            T0 + 4 * SECOND,
            ["verdict_bad_tick", "verdict_tick"],
        ),
        (T0 + YEAR, None, T0, T0 + 5 * SECOND, ["verdict_bad_tick", "verdict_tick"]),
        (T0 + YEAR, None, None, T0 + YEAR, ["verdict_tick"]),  # replay: the tick as written
    ],
)
def test_ticks_are_bounded_by_broker_time_and_the_wall_clock(
    tick: int, broker: int | None, wall: int | None, clock: int, events: list[str]
) -> None:
    """A tick moves the clock at most to its broker time minus lateness, and the wall + skew."""
    edge = _edge({}, wall=wall)
    out = edge.handle(0, 0, TICK_KEY, tick_value(tick), broker)
    assert (events, clock) == (out.events, edge.runner(0).clock_us)


def test_a_malformed_tick_is_ignored_and_counted() -> None:
    """A tick record that is not a tick moves nothing and is not dead-lettered."""
    edge = _edge({})
    out = edge.handle(0, 0, TICK_KEY, b'{"__tick__": "soon"}')
    assert (["verdict_bad_tick"], [], None) == (out.events, out.sends, edge.runner(0).clock_us)


def test_a_stored_clock_beyond_the_wall_clock_is_set_back() -> None:
    """A clock an older release let a forged tick move far ahead is repaired on restore."""
    table = {CLOCK_PREFIX + b"0": str(T0 + 10 * YEAR).encode()}
    edge = _edge(table, wall=T0)
    assert T0 - LATE == edge.runner(0).clock_us
    assert None is _edge({CLOCK_PREFIX + b"0": b"9" * 5000}).runner(0).clock_us


def test_an_unreadable_stored_request_is_dropped_and_the_partition_goes_on() -> None:
    """A forged table value does not stop the partition's restore: dropped, counted, logged."""
    table = {REQUEST_PREFIX + b"bad": b'{"partition": 0, "state": {"x": 1}}'}
    edge = _edge(table)
    out = edge.handle(0, 0, b"ok", _value(BASELINE, T0, "ok"))
    assert (1, ["verdict_quarantined", "verdict_signal"]) == (out.quarantined, out.events)
    assert REQUEST_PREFIX + b"bad" not in table and REQUEST_PREFIX + b"ok" in table


def test_a_poison_request_is_answered_and_the_rest_of_the_partition_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deciding one request raises: it is answered undecided (internal_error), others go on."""
    real = verdicts_module.decide

    def poisoned(arguments: Sequence[VerdictArgument], *rest: Any) -> VerdictOutcome:
        if any(a.id == "poison" for a in arguments):
            raise KeyError("boom")
        return real(arguments, *rest)

    monkeypatch.setattr(verdicts_module, "decide", poisoned)
    table: dict[bytes, bytes] = {}
    edge = _edge(table)
    poison = VerdictArgument("poison", "opa", "baseline", "x", 0.3, "allow")
    edge.handle(0, 0, b"p", _value(poison, T0, "p"))
    edge.handle(0, 1, b"q", _value(BASELINE, T0, "q"))
    out = edge.handle(0, 2, TICK_KEY, tick_value(T0 + 6 * SECOND))
    decided = _decided(out.sends)
    assert ("internal_error: KeyError: 'boom'", True) == (
        decided["p"].reason,
        decided["q"].timed_out,
    )
    assert 1 == out.quarantined and "verdict_quarantined" in out.events
    stored = orjson.loads(table[REQUEST_PREFIX + b"p"])["state"]
    assert ({}, decided["p"].decision_id) == (stored["signals"], stored["decision_id"])


@pytest.mark.parametrize("count", [4, 5, 40])
def test_signals_at_and_past_the_bound_keep_every_value_small(count: int) -> None:
    """At the bound the request waits; past it, it is decided at once; values stay small."""
    table: dict[bytes, bytes] = {}
    edge = _edge(table, max_signals=4)
    sends = []
    for i, argument in enumerate(many(count, claim="c" * 4096)):
        sends += edge.handle(0, i, b"r", _value(argument, T0 + i, "r")).sends
    decided = _decided(sends)
    assert ([] if count <= 4 else ["r"]) == list(decided)
    assert max(len(v) for v in table.values()) < 32 * 1024
    assert all(len(o.value) < 64 * 1024 for o in sends)


def test_a_signal_past_the_field_bounds_is_dead_lettered_with_the_field() -> None:
    """A claim longer than 4096 characters is refused like any invalid public record."""
    edge = _edge({})
    raw = orjson.dumps({**signal_obj(PII, T0, "r"), "claim": "x" * 5000})
    out = edge.handle(0, 0, b"r", raw)
    assert [NAMES.dlq] == [o.topic for o in out.sends]
    assert b"claim" in dict(out.sends[0].headers)["claimwatch.reason"]


def test_home_partition_of_the_tests() -> None:
    """One partition: every request is at home in it (the tests above rely on it)."""
    assert {0} == {partition_for(k, PARTITIONS) for k in (b"p", b"q", b"r", b"forged")}
