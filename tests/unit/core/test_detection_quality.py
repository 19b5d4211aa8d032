"""Detection quality: simulated claims -> partition processor -> alert detectors, per seed.

Every injected incident must alert in time, name the right field or source, and resolve
after it ends; clean six-hour streams (daily cycle and a 3x burst) must raise no alert.
Precision, recall and time-to-detect per incident kind are printed (pytest -s).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from claimwatch.core.alerts import Alert
from claimwatch.core.alerts.runner import AlertRunner
from claimwatch.core.claim import claim_from_envelope
from claimwatch.core.processor import PartitionProcessor, StepResult
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.claim import ClaimEnvelope
from claimwatch.policy.loading import load_policy
from claimwatch.sim.simulate import HOUR, LAG_DELAY_US, MINUTE, SECOND, Traffic, plan, simulate

from tests.support.paths import EXAMPLE_POLICY

SEEDS = range(20)
CLAIMWATCH = Path(sys.executable).with_name("claimwatch")
POLICY = load_policy(EXAMPLE_POLICY)
WINDOW = POLICY.policy.alerts.conflict_spike.window
RESOLVE_AFTER = POLICY.policy.alerts.conflict_spike.resolve_after
EVALUATION = POLICY.policy.alerts.replica_lag.evaluation
#: Ticks come once a simulated second: a clock-judged status may show up to a tick late.
TICK_SLACK = 2 * SECOND

#: Per scenario: stream length and traffic. Incident streams are cut short around the
#: incident; the clean ones stay six hours, sparse enough to run 20 of them quickly.
RUNS: dict[str, tuple[int, Traffic]] = {
    "conflict-spike": (16 * MINUTE, Traffic(rate=2.4, facts_per_field=120, focus=0.8)),
    "replica-lag": (
        34 * MINUTE,
        Traffic(rate=1.4, facts_per_field=30, change_every_s=300, fields=("payment_status",)),
    ),
    "silent-source": (26 * MINUTE, Traffic(rate=0.6, facts_per_field=30, fields=("balance",))),
    "clean": (6 * HOUR, Traffic(rate=0.06, facts_per_field=20)),
}
#: Which incident kind each alert status points at.
KIND_OF = {"firing": "conflict_spike", "lagging": "replica_lag", "stalled": "replica_lag"}
KIND_OF["silent"] = "silent_source"


@dataclass(frozen=True)
class Stream:
    """One simulated stream: its ground truth and every alert with the clock time it came."""

    scenario: str
    seed: int
    truth: dict[str, Any]
    alerts: list[tuple[int, Alert]]


def run_stream(scenario: str, seed: int, entries: bool = True) -> Stream:
    """Simulate, decide on the partition clock (a tick every second), detect.

    The detectors are fed as the worker feeds them (`entries`: the entries the claims
    partition makes of its decisions), or with the decisions alone, as a replay does.
    """
    duration, traffic = RUNS[scenario]
    claims, truth = simulate(scenario, seed, duration, traffic)
    processor = PartitionProcessor(POLICY, 0, {}, alerts=entries)
    runner = AlertRunner(POLICY)
    alerts: list[tuple[int, Alert]] = []

    def feed(result: StepResult, now: int) -> None:
        for decided in result.decisions:
            if decided.alert is not None:
                name = str(decided.record["field"])
                alerts.extend((now, a) for a in runner.on_entry(name, decided.alert))
            else:
                at = parse_rfc3339(decided.record["decided_at"])
                alerts.extend((now, a) for a in runner.on_decision(decided.record, at))

    tick = parse_rfc3339(truth["start"])
    for envelope in claims:
        claim = claim_from_envelope(envelope)
        assert claim.observed_us is not None
        while tick + SECOND <= claim.observed_us:
            tick += SECOND
            feed(processor.on_tick(tick), tick)
            alerts.extend((tick, a) for a in runner.on_clock(tick))
        feed(processor.on_claim(claim), processor.clock_us or tick)
    end = parse_rfc3339(truth["end"])
    while tick < end:
        tick += SECOND
        feed(processor.on_tick(tick), tick)
        alerts.extend((tick, a) for a in runner.on_clock(tick))
    return Stream(scenario, seed, truth, alerts)


@pytest.fixture(scope="module")
def streams() -> dict[str, list[Stream]]:
    """Every scenario for every seed, run on up to two processes."""
    jobs = [(scenario, seed) for scenario in RUNS for seed in SEEDS]
    workers = max(1, min(2, os.cpu_count() or 1))
    spawn = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
    with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
        done = list(pool.map(run_stream, *zip(*jobs, strict=True), chunksize=4))
    out: dict[str, list[Stream]] = {scenario: [] for scenario in RUNS}
    for stream in done:
        out[stream.scenario].append(stream)
    return out


# --------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class Outcome:
    """How one incident was handled."""

    kind: str
    detected_after: int | None
    resolved_after_end: int | None
    episodes: int


def _incidents(stream: Stream) -> Iterator[dict[str, Any]]:
    for incident in stream.truth["incidents"]:
        yield {
            **incident,
            "start_us": parse_rfc3339(incident["start"]),
            "end_us": parse_rfc3339(incident["end"]),
        }


def _limits(kind: str) -> tuple[int, int]:
    """How long after onset an incident must be detected, and after its end resolved."""
    if kind == "conflict_spike":
        return 2 * WINDOW, (RESOLVE_AFTER + 2) * WINDOW
    if kind == "replica_lag":
        return LAG_DELAY_US + EVALUATION + TICK_SLACK, LAG_DELAY_US + EVALUATION
    return EVALUATION + TICK_SLACK, WINDOW


def _about(alert: Alert, incident: dict[str, Any]) -> bool:
    """Whether an alert names the incident's field (spikes) or source (lag, silence)."""
    if incident["kind"] == "conflict_spike":
        return alert["kind"] == "conflict_spike" and alert["field"] == incident["field"]
    return alert["kind"] == "replica_lag" and alert.get("source") == incident["source"]


def _positive(alert: Alert) -> str | None:
    return KIND_OF.get(alert["status"])


def _matches(at: int, alert: Alert, incident: dict[str, Any]) -> bool:
    _, resolve_limit = _limits(incident["kind"])
    return (
        _positive(alert) == incident["kind"]
        and _about(alert, incident)
        and incident["start_us"] <= at <= incident["end_us"] + resolve_limit
    )


def judge(stream: Stream, incident: dict[str, Any]) -> Outcome:
    """When the incident was first alerted, and when its last episode ended (after its end)."""
    start, end = incident["start_us"], incident["end_us"]
    hits = [at for at, alert in stream.alerts if _matches(at, alert, incident)]
    detected = min(hits) - start if hits else None
    related = [(at, a) for at, a in stream.alerts if _about(a, incident) and at >= start]
    keys = sorted({(a["field"], a.get("source") or "") for _, a in related})
    last_changes, episodes = [], 0
    for key in keys:
        changes = [(at, a) for at, a in related if (a["field"], a.get("source") or "") == key]
        last_changes.append(changes[-1])
        episodes = max(episodes, sum(a["status"] in ("resolved", "ok") for _, a in changes))
    closed = all(a["status"] in ("resolved", "ok") for _, a in last_changes)
    resolved = max(at for at, _ in last_changes) - end if last_changes and closed else None
    return Outcome(incident["kind"], detected, resolved, episodes)


def false_positives(stream: Stream) -> list[tuple[int, Alert]]:
    """Alerts that point at no injected incident."""
    incidents = list(_incidents(stream))
    return [
        (at, alert)
        for at, alert in stream.alerts
        if _positive(alert) is not None and not any(_matches(at, alert, i) for i in incidents)
    ]


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("scenario", ["conflict-spike", "replica-lag", "silent-source"])
def test_every_incident_is_detected_named_and_resolved(
    streams: dict[str, list[Stream]], scenario: str
) -> None:
    """Each injected incident alerts in time, names the right field/source, resolves after."""
    for stream in streams[scenario]:
        for incident in _incidents(stream):
            detect_limit, resolve_limit = _limits(incident["kind"])
            outcome = judge(stream, incident)
            where = f"{scenario} seed {stream.seed}: {incident}"
            assert outcome.detected_after is not None, f"not detected: {where}"
            assert outcome.detected_after <= detect_limit, f"detected late: {where}"
            assert outcome.resolved_after_end is not None, f"never resolved: {where}"
            assert 0 <= outcome.resolved_after_end <= resolve_limit, f"resolve time: {where}"
            assert 1 == outcome.episodes, f"flapping: {where}"
            assert [] == false_positives(stream), where


def test_clean_six_hour_streams_raise_no_alert(streams: dict[str, list[Stream]]) -> None:
    """Six clean hours with the daily cycle and a 3x burst: not a single alert."""
    for stream in streams["clean"]:
        assert 6 * HOUR == parse_rfc3339(stream.truth["end"]) - parse_rfc3339(stream.truth["start"])
        assert 1 == len(stream.truth["bursts"])
        assert [] == stream.alerts, f"clean seed {stream.seed}"


def test_quality_figures(streams: dict[str, list[Stream]]) -> None:
    """Precision, recall and time-to-detect per incident kind (printed with pytest -s)."""
    lines = ["", "detection quality over seeds 0-19:"]
    everything = [s for runs in streams.values() for s in runs]
    figures: dict[str, tuple[float, float]] = {}
    for kind in ("conflict_spike", "replica_lag", "silent_source"):
        outcomes = [judge(s, i) for s in everything for i in _incidents(s) if i["kind"] == kind]
        found = [o.detected_after / SECOND for o in outcomes if o.detected_after is not None]
        positives = [(s, at, a) for s in everything for at, a in s.alerts if _positive(a) == kind]
        wrong = [
            (at, a) for s in everything for at, a in false_positives(s) if _positive(a) == kind
        ]
        precision = 1 - len(wrong) / len(positives) if positives else 1.0
        recall = len(found) / len(outcomes)
        resolved = [o.resolved_after_end / SECOND for o in outcomes if o.resolved_after_end]
        lines.append(
            f"  {kind:15} incidents {len(outcomes):3}  precision {precision:.3f}  "
            f"recall {recall:.3f}  time-to-detect s: median {_median(found):6.1f} "
            f"max {max(found, default=0):6.1f}  resolved after end s: median "
            f"{_median(resolved):6.1f} max {max(resolved, default=0):6.1f}"
        )
        figures[kind] = (precision, recall)
    clean_alerts = sum(len(s.alerts) for s in streams["clean"])
    lines.append(f"  clean 6h streams: {len(streams['clean'])}, alerts {clean_alerts}")
    print("\n".join(lines))
    assert {kind: (1.0, 1.0) for kind in figures} == figures


@pytest.mark.parametrize("scenario", ["conflict-spike", "replica-lag", "silent-source"])
def test_decisions_alone_raise_the_alerts_the_entries_raise(scenario: str) -> None:
    """A replay feeds decisions; the worker, its partitions' entries: the same alerts come."""
    assert run_stream(scenario, 3, entries=False) == run_stream(scenario, 3)


def test_simulator_is_deterministic_per_seed() -> None:
    """The same scenario and seed give the same claims and truth; another seed does not."""
    first = simulate("mixed", 7, 3 * MINUTE)
    assert first == simulate("mixed", 7, 3 * MINUTE)
    assert first[0] != simulate("mixed", 8, 3 * MINUTE)[0]


def test_simulated_claims_are_envelopes_in_time_order_from_policy_sources() -> None:
    """Every claim validates, they come in observed_at order, from the policy's sources."""
    claims, truth = simulate("conflict-spike", 3, 4 * MINUTE)
    assert len(claims) == truth["claims"]
    stamps = [parse_rfc3339(c["observed_at"]) for c in claims]
    assert sorted(stamps) == stamps
    for claim in claims:
        ClaimEnvelope.model_validate(claim)
    registered = set(POLICY.policy.sources)
    assert set() == {c["source"].split("@")[0] for c in claims} - registered
    owners = {c["lineage"] for c in claims if c["source"].startswith("billing-api")}
    assert {"ledger@us-east-1", "ledger@eu-west-1"} == owners


def test_incident_sizes_are_fixed() -> None:
    """Split 25% for 5 minutes, a replica 3 minutes late for 20, a source silent for 15."""
    _, truth = simulate("mixed", 1, 3 * MINUTE)
    laid_out = plan("mixed", 1)
    sizes = {i.kind: (i.end_us - i.start_us) // MINUTE for i in laid_out.incidents}
    assert {"conflict_spike": 5, "replica_lag": 20, "silent_source": 15} == sizes
    full = laid_out.truth(0)["incidents"]
    assert [0.25, 180.0] == [full[0]["disagreement"], full[1]["delay_seconds"]]
    clipped = [i.get("clipped", False) for i in truth["incidents"]]
    assert [True, True, True] == clipped  # a 3-minute stream cuts all three short


def test_simulate_command_writes_claims_and_the_truth_next_to_them(tmp_path: Path) -> None:
    """`claimwatch simulate > FILE` writes JSON lines and FILE's .truth.json beside it."""
    out = tmp_path / "claims.jsonl"
    with out.open("wb") as handle:
        done = subprocess.run(
            [str(CLAIMWATCH), "simulate", "--scenario=silent-source", "--seed=4", "--duration=2m"],
            stdout=handle,
            capture_output=False,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    assert (0, b"") == (done.returncode, done.stderr)
    truth = json.loads((tmp_path / "claims.truth.json").read_text(encoding="utf-8"))
    lines = out.read_bytes().splitlines()
    assert (truth["claims"], "silent-source", 4) == (len(lines), truth["scenario"], truth["seed"])
    assert simulate("silent-source", 4, 2 * MINUTE)[0] == [json.loads(line) for line in lines]
    bad = subprocess.run(
        [str(CLAIMWATCH), "simulate", "--scenario", "nope"], capture_output=True, check=False
    )
    assert 2 == bad.returncode


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
