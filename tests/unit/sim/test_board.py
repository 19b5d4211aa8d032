"""The demo's board: what changed is told once, conflicts enter and leave, alerts and sources."""

from __future__ import annotations

from typing import Any

from claimwatch.sim.board import Board
from rich.console import Console


def _decision(
    outcome: str, value: Any, action: str, *claims: dict[str, Any], at: str = "09:00:01"
) -> dict[str, Any]:
    return {
        "subject": "invoice:INV-1",
        "field": "payment_status",
        "outcome": outcome,
        "value": value,
        "action": action,
        "decided_at": f"2026-09-14T{at}Z",
        "claims": list(claims),
    }


BILLING = {"source": "billing-api", "authority": "system_of_record", "disposition": "won"}
REPLICA = {
    "source": "reporting-replica",
    "authority": "derived",
    "disposition": "outranked",
    "dissent": True,
    "value": "unpaid",
}


def _plain(lines: list[Any]) -> list[str]:
    return [line.plain for line in lines]


def test_a_decision_is_told_only_when_outcome_value_or_action_moves() -> None:
    """The same outcome, value and action again is no line; a new value is."""
    board = Board()
    first = _plain(board.decision(_decision("resolved", "paid", "proceed", BILLING, REPLICA)))
    again = board.decision(_decision("resolved", "paid", "proceed", BILLING, at="09:00:31"))
    moved = _plain(board.decision(_decision("resolved", "refunded", "proceed", BILLING)))
    assert [
        "09:00:01 invoice:INV-1 payment_status    resolved     paid         proceed  "
        "billing-api (system_of_record); reporting-replica outranked, dissenting"
    ] == first
    assert [] == again
    assert 1 == len(moved) and " refunded " in moved[0]
    assert 3 == board.decisions


def test_conflicts_enter_and_leave_with_the_contradicting_sources() -> None:
    """A fact turning conflict enters the panel with who contradicts whom; leaving, its value."""
    board = Board()
    a = {"source": "ledger-a", "disposition": "contradicting", "value": "paid"}
    b = {"source": "ledger-b", "disposition": "contradicting", "value": "unpaid"}
    entered = _plain(board.decision(_decision("conflict", None, "escalate", a, b)))
    left = _plain(board.decision(_decision("resolved", "paid", "proceed", BILLING)))
    assert (
        "09:00:01 conflict enters invoice:INV-1 payment_status  ledger-a paid vs ledger-b unpaid"
        == (entered[1])
    )
    assert "09:00:01 conflict leaves invoice:INV-1 payment_status  paid" == left[1]


def test_an_assertion_is_shown_as_not_verified() -> None:
    """A decision won by an asserted source says so."""
    user = {"source": "user", "authority": "asserted", "disposition": "won"}
    (line,) = Board().decision(_decision("resolved", "12 Rue", "degrade", user))
    assert line.plain.endswith("user (asserted, not verified)")


def test_alerts_fire_and_resolve_and_set_each_sources_status() -> None:
    """Spike and lag alerts are told; the lag status is the source's; firing is tracked."""
    board = Board()
    board.decision(_decision("resolved", "paid", "proceed", BILLING, REPLICA))
    lines = _plain(
        board.alert(
            {
                "kind": "conflict_spike",
                "status": "firing",
                "field": "balance",
                "window_end": "2026-09-14T09:00:40Z",
                "count": 7,
                "expected": 1.2,
            }
        )
        + board.alert(
            {
                "kind": "replica_lag",
                "status": "stalled",
                "previous_status": "ok",
                "field": "payment_status",
                "source": "reporting-replica",
                "window_end": "2026-09-14T09:01:22Z",
            }
        )
    )
    firing = sorted(board.firing)
    board.alert({"kind": "conflict_spike", "status": "resolved", "field": "balance"})
    assert [
        "09:00:40 ALERT conflict_spike on balance firing  7 facts entered conflict, 1.2 expected",
        "09:01:22 ALERT replica_lag reporting-replica on payment_status: stalled  (was ok)",
    ] == lines
    assert ["conflict_spike balance", "replica_lag reporting-replica payment_status"] == firing
    assert ["replica_lag reporting-replica payment_status"] == sorted(board.firing)
    assert {("reporting-replica", "payment_status"): "stalled"} == board.sources


def test_the_dashboard_renders_facts_events_sources_and_the_story() -> None:
    """Every panel is drawn from what the board holds."""
    board = Board()
    board.decision(_decision("resolved", "paid", "proceed", BILLING, REPLICA))
    board.truth("truth 09:00:15Z: replica_lag payment_status starts")
    console = Console(record=True, width=160, color_system=None)
    console.print(board.render())
    text = console.export_text()
    for part in (
        "facts (1; 1 decisions)",
        "invoice:INV-1 payment_status",
        "reporting-replica outranked, dissenting",
        "firing now: none",
        "sources (replica lag)",
        "truth 09:00:15Z: replica_lag payment_status starts",
    ):
        assert part in text, part


def test_decisions_of_other_runs_are_left_out() -> None:
    """A board for one run ignores decisions the filter does not claim."""
    board = Board(lambda record: False)
    assert [] == board.decision(_decision("resolved", "paid", "proceed", BILLING))
    assert (0, {}) == (board.decisions, board.facts)
