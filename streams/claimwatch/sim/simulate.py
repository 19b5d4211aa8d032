"""A deterministic claim-stream simulator with injected incidents and their ground truth.

Agents query several tools per fact at random times (a non-homogeneous Poisson process
that follows a daily cycle, with bursts); each tool answers with its own view: the two
regional deployments of the owner (`billing-api`, independent ledgers) are current,
the replica and the reporting copy serve the value as it was a moment ago (0.5-3 s).
Incidents have fixed sizes: owners disagreeing on 25% of queries for 5 minutes (0.2%
otherwise), a replica serving values 3 minutes late for 20 minutes, a source silent for
15 minutes. Sources and fields are those of examples/policy.yaml. No wall clock.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import random
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.sim.story import story
from claimwatch.wire.codec import dumps_line

START_US: Final = parse_rfc3339("2026-09-14T06:00:00Z")
SECOND: Final = 1_000_000
MINUTE: Final = 60 * SECOND
HOUR: Final = 60 * MINUTE

OWNERS: Final = (
    ("billing-api@us-east-1", "ledger@us-east-1"),
    ("billing-api@eu-west-1", "ledger@eu-west-1"),
)
REPLICAS: Final = ("ledger-replica", "reporting-replica@eu-west-1")
#: Fields the simulator can serve (both owned by billing-api, 60 s freshness).
FIELDS: Final = ("payment_status", "balance")
STATUSES: Final = ("paid", "unpaid", "overdue", "refunded")
#: Owners disagree on this share of queries outside an incident, and inside one.
NORMAL_SPLIT: Final = 0.002
INCIDENT_SPLIT: Final = 0.25
LAG_DELAY_US: Final = 3 * MINUTE
SPLIT_US: Final = 5 * MINUTE
LAG_US: Final = 20 * MINUTE
SILENCE_US: Final = 15 * MINUTE
BURST_US: Final = 10 * MINUTE


@dataclass(frozen=True, slots=True)
class Traffic:
    """How busy the stream is: queries per second at the daily cycle's mean, facts per field.

    Tools stamp `observed_at` at whole seconds (as a Date header does); the value they
    serve is the one of the precise moment.
    """

    rate: float = 4.0
    facts_per_field: int = 60
    change_every_s: float = 600.0
    replica_asked: float = 0.7
    answer_ok: float = 0.98
    fields: tuple[str, ...] = FIELDS
    #: Share of the queries aimed at the field of a conflict-spike incident (0: even spread).
    focus: float = 0.0


@dataclass(frozen=True, slots=True)
class Incident:
    """One injected incident (`conflict_spike`, `replica_lag` or `silent_source`)."""

    kind: str
    start_us: int
    end_us: int
    field: str | None = None
    source: str | None = None
    clipped: bool = False

    def to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"kind": self.kind}
        if self.field is not None:
            obj["field"] = self.field
        if self.source is not None:
            obj["source"] = self.source
        if self.kind == "conflict_spike":
            obj["disagreement"] = INCIDENT_SPLIT
            obj["normal_disagreement"] = NORMAL_SPLIT
        if self.kind == "replica_lag":
            obj["delay_seconds"] = LAG_DELAY_US / SECOND
        obj["start"] = format_rfc3339(self.start_us)
        obj["end"] = format_rfc3339(self.end_us)
        if self.clipped:
            obj["clipped"] = True  # cut short by the end of the stream
        return obj


@dataclass(frozen=True, slots=True)
class Plan:
    """A scenario laid out for one seed: duration, traffic, bursts and incidents."""

    scenario: str
    seed: int
    start_us: int
    end_us: int
    traffic: Traffic
    bursts: list[tuple[int, int, float]] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)

    def truth(self, claims: int) -> dict[str, Any]:
        """The ground truth written next to the claims."""
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "start": format_rfc3339(self.start_us),
            "end": format_rfc3339(self.end_us),
            "policy": "examples/policy.yaml",
            "fields": list(self.traffic.fields),
            "traffic": {
                "queries_per_second": self.traffic.rate,
                "facts_per_field": self.traffic.facts_per_field,
                "daily_cycle": "peak 16:00Z, trough 04:00Z, peak/trough 4x",
            },
            "bursts": [
                {"start": format_rfc3339(a), "end": format_rfc3339(b), "factor": f}
                for a, b, f in self.bursts
            ],
            "incidents": [i.to_obj() for i in self.incidents],
            "claims": claims,
        }


def daily_cycle(at_us: int) -> float:
    """Traffic multiplier by time of day: 0.4 at 04:00Z, 1.6 at 16:00Z (mean 1)."""
    hours = (at_us % (24 * HOUR)) / HOUR
    return 1.0 + 0.6 * math.sin(2 * math.pi * (hours - 10.0) / 24.0)


# --------------------------------------------------------------------------- scenarios


def _second(start: int, offset: float) -> int:
    """`start` plus `offset` µs, on a whole second."""
    moment = start + int(offset)
    return moment - moment % SECOND


def _clean(
    rng: random.Random, start: int, duration: int, fields: tuple[str, ...]
) -> tuple[list[Any], list[Incident]]:
    onset = _second(start, rng.uniform(0.2, 0.7) * duration)
    return [(onset, min(onset + BURST_US, start + duration), 3.0)], []


def _spike(
    rng: random.Random, start: int, duration: int, fields: tuple[str, ...]
) -> tuple[list[Any], list[Incident]]:
    onset = _second(start, rng.uniform(0.25, 0.35) * duration)
    name = rng.choice(fields)
    return [], [Incident("conflict_spike", onset, onset + SPLIT_US, field=name)]


def _lag(
    rng: random.Random, start: int, duration: int, fields: tuple[str, ...]
) -> tuple[list[Any], list[Incident]]:
    onset = _second(start, rng.uniform(0.12, 0.16) * duration)
    return [], [Incident("replica_lag", onset, onset + LAG_US, source=rng.choice(REPLICAS))]


def _silent(
    rng: random.Random, start: int, duration: int, fields: tuple[str, ...]
) -> tuple[list[Any], list[Incident]]:
    onset = _second(start, rng.uniform(0.15, 0.2) * duration)
    return [], [Incident("silent_source", onset, onset + SILENCE_US, source=rng.choice(REPLICAS))]


def _mixed(
    rng: random.Random, start: int, duration: int, fields: tuple[str, ...]
) -> tuple[list[Any], list[Incident]]:
    def at(lo: float, hi: float) -> int:
        return _second(start, rng.uniform(lo, hi) * duration)

    lagging, silent = rng.sample(REPLICAS, 2)
    burst = at(0.08, 0.12)
    split, lag, quiet = at(0.25, 0.3), at(0.4, 0.45), at(0.7, 0.75)
    return [(burst, burst + BURST_US, 3.0)], [
        Incident("conflict_spike", split, split + SPLIT_US, field=rng.choice(fields)),
        Incident("replica_lag", lag, lag + LAG_US, source=lagging),
        Incident("silent_source", quiet, quiet + SILENCE_US, source=silent),
    ]


Layout = Callable[[random.Random, int, int, tuple[str, ...]], tuple[list[Any], list[Incident]]]
#: Scenario name -> (default duration, layout of bursts and incidents).
SCENARIOS: Final[dict[str, tuple[int, Layout]]] = {
    "clean": (6 * HOUR, _clean),
    "conflict-spike": (30 * MINUTE, _spike),
    "replica-lag": (40 * MINUTE, _lag),
    "silent-source": (35 * MINUTE, _silent),
    "mixed": (2 * HOUR, _mixed),
}


def plan(
    scenario: str, seed: int, duration_us: int | None = None, traffic: Traffic | None = None
) -> Plan:
    """Lay out a scenario; incidents past the end are dropped, those running over it clipped."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}: one of {', '.join(SCENARIOS)}")
    default, layout = SCENARIOS[scenario]
    duration = duration_us if duration_us is not None else default
    if duration <= 0:
        raise ValueError("the duration must be positive")
    traffic = traffic or Traffic()
    unknown = set(traffic.fields) - set(FIELDS)
    if unknown or not traffic.fields:
        raise ValueError(f"fields must be some of {', '.join(FIELDS)}")
    rng = random.Random(f"plan:{scenario}:{seed}")
    bursts, incidents = layout(rng, START_US, duration, traffic.fields)
    end = START_US + duration
    kept = [
        Incident(i.kind, i.start_us, min(i.end_us, end), i.field, i.source, i.end_us > end)
        for i in incidents
        if i.start_us < end
    ]
    return Plan(scenario, seed, START_US, end, traffic, bursts, kept)


# --------------------------------------------------------------------------- generation


@dataclass(slots=True)
class _Fact:
    subject: str
    field: str
    times: list[int]
    values: list[Any]

    def at(self, moment: int) -> Any:
        return self.values[max(bisect.bisect_right(self.times, moment) - 1, 0)]


def _value(name: str, rng: random.Random, old: Any = None) -> Any:
    if name == "payment_status":
        return rng.choice([s for s in STATUSES if s != old])
    amount = rng.randrange(0, 100_000) * 5
    while isinstance(old, dict) and old.get("amount") == amount:
        amount = rng.randrange(0, 100_000) * 5
    return {"amount": amount, "currency": "USD", "minor_units": True}


def _facts(p: Plan, rng: random.Random) -> list[_Fact]:
    facts = []
    mean_gap = p.traffic.change_every_s * SECOND
    for name in p.traffic.fields:
        for i in range(p.traffic.facts_per_field):
            value = _value(name, rng)
            fact = _Fact(f"invoice:INV-{i + 1:05d}", name, [p.start_us - HOUR], [value])
            moment = p.start_us + int(rng.expovariate(1.0) * mean_gap)
            while moment < p.end_us:
                value = _value(name, rng, value)
                fact.times.append(moment)
                fact.values.append(value)
                moment += max(SECOND, int(rng.expovariate(1.0) * mean_gap))
            facts.append(fact)
    return facts


def _rate(p: Plan, moment: int) -> float:
    factor = 1.0
    for start, end, burst in p.bursts:
        if start <= moment < end:
            factor *= burst
    return p.traffic.rate * daily_cycle(moment) * factor


def _active(p: Plan, kind: str, moment: int, *, field: str = "", source: str = "") -> bool:
    return any(
        i.kind == kind
        and i.start_us <= moment < i.end_us
        and (i.field is None or i.field == field)
        and (i.source is None or i.source == source)
        for i in p.incidents
    )


def _lag_onset(p: Plan, source: str, moment: int) -> int | None:
    for i in p.incidents:
        if i.kind == "replica_lag" and i.source == source and i.start_us <= moment < i.end_us:
            return i.start_us
    return None


def generate(p: Plan) -> list[dict[str, Any]]:
    """The claims of a plan in `observed_at` order (ties by claim_id); same plan, same claims."""
    rng = random.Random(f"claims:{p.scenario}:{p.seed}")
    facts = _facts(p, rng)
    peak = p.traffic.rate * 1.6 * max([b[2] for b in p.bursts] + [1.0])
    claims: list[dict[str, Any]] = []
    moment, query = p.start_us, 0
    tools = {"billing-api": "billing_lookup", "ledger-replica": "ledger_cache"}
    while True:
        moment += int(rng.expovariate(peak) * SECOND)
        if moment >= p.end_us:
            break
        if rng.random() * peak >= _rate(p, moment):
            continue
        query += 1
        fact = _pick(p, rng, facts)
        agent = f"agent-{rng.randrange(24):02d}"
        asked: list[tuple[str, str | None]] = list(OWNERS)
        asked += [(r, None) for r in REPLICAS if rng.random() < p.traffic.replica_asked]
        for k, (source, lineage) in enumerate(asked):
            observed = moment + rng.randrange(0, 400) * 1000
            stamped = observed - observed % SECOND
            ok = rng.random() < p.traffic.answer_ok
            status = "ok" if ok else rng.choice(("unavailable", "error"))
            if _active(p, "silent_source", observed, source=source):
                continue
            claim: dict[str, Any] = {
                "claim_id": f"sim-{p.seed}-{query:07d}-{k}",
                "subject": fact.subject,
                "field": fact.field,
                "source": source,
                "observed_at": format_rfc3339(stamped),
                "status": status,
            }
            if ok:
                claim["value"] = _answer(p, rng, fact, source, observed)
            if lineage is not None:
                claim["lineage"] = lineage
            claim["agent_id"] = agent
            claim["tool"] = tools.get(source.split("@", 1)[0], "reporting_query")
            claim["trace_id"] = f"trace-{p.seed}-{query:07d}"
            claims.append(claim)
    claims.sort(key=lambda c: (c["observed_at"], c["claim_id"]))
    return claims


def _pick(p: Plan, rng: random.Random, facts: list[_Fact]) -> _Fact:
    focused = {i.field for i in p.incidents if i.kind == "conflict_spike"}
    if p.traffic.focus > 0 and focused and rng.random() < p.traffic.focus:
        return rng.choice([f for f in facts if f.field in focused])
    return rng.choice(facts)


def _answer(p: Plan, rng: random.Random, fact: _Fact, source: str, observed: int) -> Any:
    if source == OWNERS[0][0]:
        return fact.at(observed)
    if source == OWNERS[1][0]:
        split = _active(p, "conflict_spike", observed, field=fact.field)
        value = fact.at(observed)
        chance = INCIDENT_SPLIT if split else NORMAL_SPLIT
        return _value(fact.field, rng, value) if rng.random() < chance else value
    view = observed - rng.randrange(500, 3000) * 1000
    onset = _lag_onset(p, source, observed)
    if onset is not None:
        view = max(onset, observed - LAG_DELAY_US)
    return fact.at(view)


def simulate(
    scenario: str, seed: int, duration_us: int | None = None, traffic: Traffic | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The claims of a scenario for a seed, and its ground truth (`demo`: the scripted story)."""
    if scenario == "demo":
        return story()
    laid_out = plan(scenario, seed, duration_us, traffic)
    claims = generate(laid_out)
    return claims, laid_out.truth(len(claims))


def truth_path_for(stdout_fd: int = 1) -> Path | None:
    """`claims.truth.json` next to the file stdout is redirected to, when it is a file."""
    try:
        if not stat.S_ISREG(os.fstat(stdout_fd).st_mode):
            return None
        target = Path(os.readlink(f"/proc/self/fd/{stdout_fd}"))
    except OSError:
        return None
    if not target.is_absolute() or not target.parent.is_dir():
        return None
    return target.with_name(f"{target.stem}.truth.json")


def write_claims(claims: list[dict[str, Any]], out: BinaryIO) -> None:
    """Write claims as JSON lines."""
    for claim in claims:
        out.write(dumps_line(claim))
    out.flush()


def write_truth(truth: dict[str, Any], path: Path) -> None:
    """Write the ground truth as indented JSON."""
    path.write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
