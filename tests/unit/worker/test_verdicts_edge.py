"""The verdicts edge: records in, decisions out, state kept in a bytes table across restarts."""

from __future__ import annotations

import orjson
from claimwatch.core.argue import VerdictArgument
from claimwatch.core.argue.verdicts import VerdictConfig
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import Policy
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.ticks import TICK_KEY, tick_value
from claimwatch.worker.verdicts.edge import VerdictsEdge

from tests.support.clocks import SECOND, T0
from tests.support.verdicts import BASELINE, PII, POLICY

NAMES = TopicNames("t.")
PARTITIONS = 4


def _edge(table: dict[bytes, bytes]) -> VerdictsEdge:
    config = VerdictConfig.from_policy(Policy.model_validate(POLICY))
    return VerdictsEdge(config, NAMES, PARTITIONS, table)


def _value(a: VerdictArgument, at_s: float, request: str = "req-1") -> bytes:
    return orjson.dumps(
        {
            "request_id": request,
            "request_type": "upload",
            "check": a.check,
            "argument": a.id,
            "kind": a.kind,
            "claim": a.claim,
            "strength": a.strength,
            "decision": a.decision,
            "observed_at": format_rfc3339(T0 + round(at_s * SECOND)),
        }
    )


def test_state_survives_a_restart_and_the_tick_decides_undecided() -> None:
    """A rebuilt edge reads the open request from the table; the tick past the timeout decides."""
    table: dict[bytes, bytes] = {}
    home = partition_for(b"req-1", PARTITIONS)
    first = _edge(table)
    assert [] == first.handle(home, 0, b"req-1", _value(BASELINE, 0.0)).sends
    assert [] == first.handle(home, 1, b"req-1", _value(PII, 1.0)).sends
    again = _edge(table)
    out = again.handle(home, 2, TICK_KEY, tick_value(T0 + 6 * SECOND))
    assert [(NAMES.verdicts_decisions, b"req-1", home)] == [
        (o.topic, o.key, o.partition) for o in out.sends
    ]
    assert "undecided" == orjson.loads(out.sends[0].value)["decision"]
    assert [] == again.handle(home, 3, TICK_KEY, tick_value(T0 + 7 * SECOND)).sends


def test_misrouted_and_invalid_records() -> None:
    """A signal off its home is re-sent there; a record that is no signal is dead-lettered."""
    edge = _edge({})
    home = partition_for(b"req-1", PARTITIONS)
    away = (home + 1) % PARTITIONS
    rerouted = edge.handle(away, 0, b"other", _value(BASELINE, 0.0)).sends
    assert [(NAMES.verdicts, b"req-1", home)] == [(o.topic, o.key, o.partition) for o in rerouted]
    dead = edge.handle(away, 1, b"x", b"{not json").sends
    assert [(NAMES.dlq, b"x", away)] == [(o.topic, o.key, o.partition) for o in dead]
    assert NAMES.verdicts.encode() == dict(dead[0].headers)["claimwatch.topic"]
