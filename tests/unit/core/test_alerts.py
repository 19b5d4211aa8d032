"""Alert detectors: conflict spikes per field and replica lag per source, on the event clock."""

from __future__ import annotations

import json
import math
from typing import Any

from claimwatch.core.alerts import Alert, ConflictSpike, LagState, SpikeState, poisson_sf
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.alert import AlertRecord
from claimwatch.models.policy import ConflictSpikeAlert
from hypothesis import given
from hypothesis import strategies as st

from tests.support.alerts import REPLICA, Feed, lagging_changes, warm_up
from tests.support.clocks import SECOND, T0

MINUTE = 60 * SECOND

# --------------------------------------------------------------------------- spike helpers


def spike_decision(n: int, outcome: str, subject: str | None = None) -> dict[str, Any]:
    """A payment_status decision; a conflict has billing-api and a second owner disagreeing."""
    claims: list[dict[str, Any]] = []
    if outcome == "conflict":
        claims = [
            {"claim_id": f"a{n}", "source": "billing-api", "status": "ok", "value": "paid"},
            {"claim_id": f"b{n}", "source": "billing-api@eu", "status": "ok", "value": "unpaid"},
        ]
        for claim in claims:
            claim["disposition"] = "contradicting"
    return {
        "decision_id": f"dec_{n:032x}",
        "subject": subject or f"invoice:{n}",
        "field": "payment_status",
        "outcome": outcome,
        "claims": claims,
    }


def run_windows(
    detector: ConflictSpike, windows: list[tuple[int, int]], state: SpikeState | None = None
) -> tuple[SpikeState | None, list[Alert]]:
    """Feed (decisions, conflicts) per one-minute window, evenly spread; close the last one."""
    alerts: list[Alert] = []
    n = 0
    for w, (decisions, conflicts) in enumerate(windows):
        start = T0 + w * MINUTE
        for i in range(decisions):
            n += 1
            outcome = "conflict" if i < conflicts else "resolved"
            now = start + i * (MINUTE // max(decisions, 1))
            state, out = detector.step(state, spike_decision(n, outcome), now)
            alerts += out
    if state is not None:
        state, out = detector.advance(state, T0 + len(windows) * MINUTE)
        alerts += out
    return state, alerts


# --------------------------------------------------------------------------- spike tests


def test_spike_fires_on_a_burst_and_resolves_after_quiet_windows() -> None:
    """A burst of conflicts fires once; `resolve_after` quiet windows later it resolves."""
    detector = ConflictSpike(ConflictSpikeAlert(resolve_after=3))
    windows = [(100, 1)] * 10 + [(100, 20), (100, 15)] + [(100, 1)] * 3
    _, alerts = run_windows(detector, windows)
    assert ["firing", "resolved"] == [a["status"] for a in alerts]
    firing, resolved = alerts
    assert format_rfc3339(T0 + 10 * MINUTE) == firing["window_start"]
    assert format_rfc3339(T0 + 11 * MINUTE) == firing["window_end"]
    assert (20, 100) == (firing["count"], firing["decisions"])
    assert 1.0 == firing["expected"]  # the 1% floor: the learned rate is 1% too
    assert firing["p_value"] < 0.001
    assert [{"source": "billing-api", "count": 20}, {"source": "billing-api@eu", "count": 20}] == (
        firing["sources"]
    )
    assert [{"sources": ["billing-api", "billing-api@eu"], "count": 20}] == firing["source_pairs"]
    assert 10 == len(firing["sample_decision_ids"])
    assert format_rfc3339(T0 + 14 * MINUTE) == resolved["window_start"]
    for alert in alerts:
        AlertRecord.model_validate(alert)


def test_traffic_burst_at_the_same_conflict_rate_does_not_fire() -> None:
    """Three times the decisions with the usual 5% conflict rate stay quiet; 15% fires."""
    detector = ConflictSpike()
    history = [(100, 5)] * 30
    _, burst = run_windows(detector, [*history, (300, 15)])
    _, spike = run_windows(detector, [*history, (100, 15)])
    assert [] == burst
    assert ["firing"] == [a["status"] for a in spike]
    assert 5.0 == round(spike[0]["expected"], 6)


def test_first_conflict_on_a_field_without_history_does_not_page() -> None:
    """Even with min_count 1, the floored rate keeps a first conflict from paging."""
    detector = ConflictSpike(ConflictSpikeAlert(min_count=1))
    state, alerts = detector.step(None, spike_decision(1, "conflict"), T0)
    state, more = detector.advance(state, T0 + 10 * MINUTE)
    assert ([], []) == (alerts, more)
    assert 1.0 == state.base_conflicts / state.base_decisions  # learned: 1 conflict in 1


def test_a_fact_staying_in_conflict_is_counted_once() -> None:
    """Only entering conflict counts: staying in it does not, leaving and re-entering does."""
    detector = ConflictSpike(ConflictSpikeAlert(min_count=1, alpha=0.5))
    state: SpikeState | None = None
    for n, outcome in enumerate(["conflict", "conflict", "resolved", "conflict", "conflict"]):
        state, _ = detector.step(state, spike_decision(n, outcome, "invoice:1"), T0 + n)
    assert state is not None
    assert (2, 5) == (state.entering, state.decisions)


def test_windows_close_on_the_clock_without_decisions() -> None:
    """`advance` alone closes windows: an episode resolves while the field is silent."""
    detector = ConflictSpike()
    state, alerts = run_windows(detector, [(100, 1)] * 5 + [(100, 30)])
    assert ["firing"] == [a["status"] for a in alerts]
    assert state is not None
    state, later = detector.advance(state, T0 + 60 * MINUTE)
    assert ["resolved"] == [a["status"] for a in later]
    assert format_rfc3339(T0 + 8 * MINUTE) == later[0]["window_start"]
    assert T0 + 60 * MINUTE == state.window_start


def test_spike_state_survives_a_json_round_trip() -> None:
    """A state stored as JSON and read back continues exactly like the original."""
    detector = ConflictSpike()
    first = [(100, 1)] * 8
    state, _ = run_windows(detector, first)
    assert state is not None
    copy = SpikeState.from_obj(json.loads(json.dumps(state.to_obj())))
    assert state == copy
    rest = [(100, 25), (100, 0)]
    _, direct = run_windows(detector, first + rest)
    n, alerts = 800, []
    for w, (decisions, conflicts) in enumerate(rest, start=len(first)):
        for i in range(decisions):
            n += 1
            outcome = "conflict" if i < conflicts else "resolved"
            now = T0 + w * MINUTE + i * (MINUTE // decisions)
            copy, out = detector.step(copy, spike_decision(n, outcome), now)
            alerts += out
    _, out = detector.advance(copy, T0 + 10 * MINUTE)
    assert direct == alerts + out


@given(st.integers(min_value=0, max_value=60), st.floats(min_value=0.0, max_value=40.0))
def test_poisson_tail_matches_the_direct_sum(count: int, expected: float) -> None:
    """P(X >= k) agrees with 1 - sum of the probability mass below k."""
    direct = 1.0 - sum(math.exp(-expected) * expected**i / math.factorial(i) for i in range(count))
    assert math.isclose(max(direct, 0.0), poisson_sf(count, expected), abs_tol=1e-12)


# --------------------------------------------------------------------------- lag helpers


# --------------------------------------------------------------------------- lag tests


def test_lag_sample_is_measured_exactly_from_claims(policy: CompiledPolicy) -> None:
    """Lag runs from the owner's first claim of a new value to the source's first claim of it."""
    feed = Feed(policy)
    feed.observe("invoice:1", T0, ("billing-api", "unpaid"), (REPLICA, "unpaid"))
    feed.observe("invoice:1", T0 + 100 * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid"))
    feed.observe("invoice:1", T0 + 130 * SECOND, (REPLICA, "unpaid"))
    feed.observe("invoice:1", T0 + 140 * SECOND, (REPLICA, "paid"), ("billing-api", "paid"))
    feed.observe("invoice:1", T0 + 150 * SECOND, (REPLICA, "paid"))
    assert feed.state is not None
    track = feed.state.sources[REPLICA]
    # at, lag (140 - 100), seen behind (130 - 100), bound from the last "unpaid" (140 - 0)
    assert [[T0 + 140 * SECOND, 40 * SECOND, 30 * SECOND, 140 * SECOND]] == track.samples
    assert [] == track.verdicts  # 30 s < lag <= 140 s against a 60 s budget: not conclusive
    assert "billing-api" not in feed.state.sources


def test_status_goes_lagging_and_back_with_one_alert_each(policy: CompiledPolicy) -> None:
    """Five facts seen 70 s behind: lagging; four prompt catch-ups later: ok again."""
    feed = Feed(policy)
    subjects = [f"invoice:{i}" for i in range(5)]
    warm_up(feed, subjects)
    lagging_changes(feed, subjects, T0 + 100 * SECOND, "unpaid", "paid")
    assert [("lagging", "ok")] == feed.statuses()
    lagging = feed.alerts[0]
    # fired when a fourth fact was seen 70 s behind: 4 of 5 judged above the budget
    figures = {"median": 2.0, "max": 2.0, "samples": 1, "over_budget": 0, "behind_facts": 4}
    assert figures == lagging["lag_seconds"]
    assert format_rfc3339(T0 + 175 * SECOND) == lagging["window_end"]
    assert feed.state is not None
    assert [2 * SECOND] + [100 * SECOND] * 5 == [s[1] for s in feed.state.sources[REPLICA].samples]
    assert (REPLICA, "payment_status", 60.0) == (
        lagging["source"],
        lagging["field"],
        lagging["budget_seconds"],
    )
    # 6 of its 17 claims met a fresh owner claim with another value: outranked dissent
    assert (17, 0.352941, 0.0) == (
        lagging["claims"],
        lagging["dissent_ratio"],
        lagging["stale_ratio"],
    )
    for i, subject in enumerate(subjects):
        at = T0 + (300 + i) * SECOND
        feed.observe(subject, at, ("billing-api", "paid"), (REPLICA, "paid"))
        feed.observe(subject, at + 20 * SECOND, ("billing-api", "refunded"), (REPLICA, "paid"))
        feed.observe(subject, at + 25 * SECOND, (REPLICA, "refunded"))
    assert [("lagging", "ok"), ("ok", "lagging")] == feed.statuses()
    for alert in feed.alerts:
        AlertRecord.model_validate(alert)


def test_a_source_that_stops_answering_goes_silent_then_ok(policy: CompiledPolicy) -> None:
    """No claim for longer than the evaluation window while the field is busy: silent."""
    feed = Feed(policy)
    feed.observe("invoice:0", T0, ("billing-api", "paid"), (REPLICA, "paid"))
    for n in range(1, 31):
        feed.observe(f"invoice:{n}", T0 + n * 10 * SECOND, ("billing-api", "paid"))
        feed.advance(T0 + n * 10 * SECOND + 2 * SECOND)
    assert [("silent", "ok")] == feed.statuses()
    assert format_rfc3339(T0 + 302 * SECOND) == feed.alerts[0]["window_end"]
    feed.observe("invoice:0", T0 + 400 * SECOND, (REPLICA, "paid"))
    assert [("silent", "ok"), ("ok", "silent")] == feed.statuses()


def test_a_quiet_field_does_not_make_its_sources_silent(policy: CompiledPolicy) -> None:
    """Without decisions of the field in between, a long pause is no silence."""
    feed = Feed(policy)
    feed.observe("invoice:0", T0, ("billing-api", "paid"), (REPLICA, "paid"))
    feed.advance(T0 + 3600 * SECOND)
    feed.observe("invoice:1", T0 + 3601 * SECOND, ("billing-api", "paid"))
    assert [] == feed.alerts


def test_a_replica_whose_values_stop_changing_is_stalled(policy: CompiledPolicy) -> None:
    """Old values on five facts past the budget and no catch-up at all: stalled."""
    feed = Feed(policy)
    subjects = [f"invoice:{i}" for i in range(5)]
    for i, subject in enumerate(subjects):
        feed.observe(subject, T0 + i * SECOND, ("billing-api", "unpaid"), (REPLICA, "unpaid"))
        feed.observe(subject, T0 + (10 + i) * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid"))
    for i, subject in enumerate(subjects):
        feed.observe(subject, T0 + (100 + i) * SECOND, (REPLICA, "unpaid"))
    assert [("stalled", "ok")] == feed.statuses()
    feed.observe(subjects[0], T0 + 120 * SECOND, (REPLICA, "paid"))
    assert [("stalled", "ok"), ("lagging", "stalled")] == feed.statuses()  # it moves, slowly
    for i, subject in enumerate(subjects[1:], start=1):
        feed.observe(subject, T0 + (120 + i) * SECOND, (REPLICA, "paid"))
    assert ("lagging", "stalled") == feed.statuses()[-1]


def test_a_replica_within_its_usual_delay_raises_nothing(policy: CompiledPolicy) -> None:
    """Changes picked up within a couple of seconds never page."""
    feed = Feed(policy)
    values = ["unpaid", "paid", "refunded", "overdue"]
    for round_ in range(12):
        for i in range(6):
            at = T0 + (round_ * 40 + i) * SECOND
            old, new = values[round_ % 4], values[(round_ + 1) % 4]
            feed.observe(f"invoice:{i}", at, ("billing-api", new), (REPLICA, old))
            feed.observe(f"invoice:{i}", at + 2 * SECOND, (REPLICA, new))
    assert [] == feed.alerts
    assert feed.state is not None
    samples = feed.state.sources[REPLICA].samples
    assert 20 == len(samples)  # the most recent 20 of 66 catch-ups
    assert [2 * SECOND] * 20 == [lag for _, lag, _, _ in samples]


def test_owner_claims_in_a_conflict_do_not_move_the_owner_value(policy: CompiledPolicy) -> None:
    """Only an owner value that won a resolved decision counts as the owner's value."""
    feed = Feed(policy)
    east, west = ("billing-api@us-east-1", "ledger-east"), ("billing-api@eu-west-1", "ledger-west")
    feed.observe("invoice:1", T0, (east[0], "unpaid", east[1]), (west[0], "unpaid", west[1]))
    split = feed.observe(
        "invoice:1", T0 + 10 * SECOND, (east[0], "paid", east[1]), (west[0], "overdue", west[1])
    )
    assert "conflict" == split["outcome"]
    assert feed.state is not None
    values = feed.state.facts["invoice:1|payment_status"].values
    assert ["unpaid"] == [v.value for v in values]
    feed.observe(
        "invoice:1", T0 + 20 * SECOND, (east[0], "paid", east[1]), (west[0], "paid", west[1])
    )
    assert [("unpaid", False), ("paid", True)] == [(v.value, v.change) for v in values]
    assert T0 + 20 * SECOND == values[-1].since


def test_detectors_are_deterministic_and_their_state_is_json(policy: CompiledPolicy) -> None:
    """The same decisions give the same alerts and ids; the state survives JSON."""

    def run() -> tuple[list[Alert], LagState]:
        feed = Feed(policy)
        subjects = [f"invoice:{i}" for i in range(5)]
        warm_up(feed, subjects)
        lagging_changes(feed, subjects, T0 + 100 * SECOND, "unpaid", "paid")
        assert feed.state is not None
        return feed.alerts, feed.state

    first, state = run()
    second, _ = run()
    assert first == second
    assert 1 == len(first)
    assert state == LagState.from_obj(json.loads(json.dumps(state.to_obj())))
    ids = {a["alert_id"] for a in first}
    assert len(first) == len(ids)
    assert all(i.startswith("alr_") for i in ids)
