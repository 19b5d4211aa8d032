"""The demo's story, replayed offline on the demo policy, tells every part within two minutes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.sim.board import Board
from claimwatch.sim.simulate import simulate
from claimwatch.sim.story import (
    LIVE_LATENCY_US,
    SECOND,
    SPIKE_S,
    SPIKE_SPAN_S,
    START_US,
    aligned_start,
    story,
)

from tests.support.cli import run_cli

DEMO_POLICY = Path(__file__).resolve().parents[3] / "examples" / "demo-policy.yaml"
TWO_MINUTES = 120


def test_the_story_is_in_time_order_and_the_same_every_time() -> None:
    """Claims come in `observed_at` order with distinct ids; `simulate demo` is the story."""
    claims, truth = story()
    times = [parse_rfc3339(c["observed_at"]) for c in claims]
    assert sorted(times) == times
    assert len(claims) == len({c["claim_id"] for c in claims}) == truth["claims"]
    assert (claims, truth) == story() == simulate("demo", 7)
    assert ["replica_lag", "conflict_spike"] == [i["kind"] for i in truth["incidents"]]


def test_replayed_on_the_demo_policy_every_part_shows_within_two_minutes(tmp_path: Path) -> None:
    """Outranked replica, two ledgers in conflict, an assertion, both alerts and the resolve."""
    claims, _ = story()
    source = tmp_path / "story.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in claims))
    out, alerts = tmp_path / "decisions.jsonl", tmp_path / "alerts.jsonl"
    done = run_cli(
        "replay", "--policy", str(DEMO_POLICY), "--input", str(source),
        "--out", str(out), "--alerts", str(alerts),
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    board = Board()
    told: list[str] = []
    for line in out.read_text().splitlines():
        told += [t.plain for t in board.decision(json.loads(line))]
    raised = [json.loads(line) for line in alerts.read_text().splitlines()]
    for line in raised:
        told += [t.plain for t in board.alert(line)]

    def seen(*parts: str) -> bool:
        return any(all(p in line for p in parts) for line in told)

    assert seen("INV-1 payment_status", "resolved", "reporting-replica outranked, dissenting")
    assert seen("INV-2 balance", "conflict", "escalate", "billing-api@us-east-1")
    assert seen("conflict enters invoice:INV-2 balance")
    assert seen("INV-3 shipping_address", "asserted, not verified")
    assert seen("ALERT replica_lag reporting-replica on payment_status: stalled")
    assert seen("ALERT conflict_spike on balance firing")
    assert seen("ALERT conflict_spike on balance resolved")
    assert seen("conflict leaves invoice:INV-10 balance")
    late = [
        a
        for a in raised
        if (parse_rfc3339(a["window_end"]) - START_US) / 1e6 > TWO_MINUTES
        and a["status"] in ("firing", "resolved", "stalled")
    ]
    assert [] == late


@pytest.mark.parametrize("late_s", [0, 3, 9, 14.5, 19.9])
def test_a_live_start_lays_the_spike_within_one_detector_window(late_s: float) -> None:
    """The spike's decisions, however late within a live worker's latency, share one window.

    Wherever the clock is in a window, the start is less than one window away.
    """
    window, settle = 20 * SECOND, 2 * SECOND
    now = START_US + int(late_s * SECOND)
    start = aligned_start(now, window, settle)
    first = start + SPIKE_S * SECOND + settle
    last = first + int(SPIKE_SPAN_S * SECOND) + LIVE_LATENCY_US
    assert (True, first // window) == (0 <= start - now < window, last // window)


@pytest.mark.parametrize("late_s", [0, 7, 13])
def test_replayed_from_an_aligned_start_the_spike_fires(tmp_path: Path, late_s: float) -> None:
    """The story moved to a start `aligned_start` picks still raises its conflict spike."""
    start = aligned_start(START_US + int(late_s * SECOND), 20 * SECOND, 2 * SECOND)
    claims = [
        {**c, "observed_at": format_rfc3339(parse_rfc3339(c["observed_at"]) - START_US + start)}
        for c in story()[0]
    ]
    source = tmp_path / "story.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in claims))
    alerts = tmp_path / "alerts.jsonl"
    done = run_cli(
        "replay", "--policy", str(DEMO_POLICY), "--input", str(source),
        "--out", str(tmp_path / "decisions.jsonl"), "--alerts", str(alerts),
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    spikes = [json.loads(line) for line in alerts.read_text().splitlines()]
    statuses = [a["status"] for a in spikes if a["kind"] == "conflict_spike"]
    assert ["firing", "resolved"] == statuses
