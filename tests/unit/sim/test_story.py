"""The demo's story, replayed offline on the demo policy, tells every part within two minutes."""

from __future__ import annotations

import json
from pathlib import Path

from streams.core.timeutil import parse_rfc3339
from streams.sim.board import Board
from streams.sim.simulate import simulate
from streams.sim.story import START_US, story
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
