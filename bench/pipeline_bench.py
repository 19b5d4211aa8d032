"""End-to-end worker speed and latency vs an aiokafka passthrough with the same fan-out."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.wire.kafka import env_bootstrap
from claimwatch.wire.topics import TopicNames, ensure_topics, partition_for

from bench.children import (
    PARTITIONS,
    Child,
    faust_floor_child,
    free_port,
    passthrough_child,
    wait_file,
    wait_healthy,
    worker,
)
from bench.kafka_io import (
    Produced,
    admin_client,
    create_topics,
    delete_topics,
    end_offsets,
    mean_sizes,
    new_producer,
    note,
    produce,
)
from bench.workload import POLICY, claims

CLAIMS = int(os.environ.get("CLAIMWATCH_BENCH_PIPELINE_CLAIMS", "50000"))
FACTS = int(os.environ.get("CLAIMWATCH_BENCH_PIPELINE_FACTS", "10000"))
RATE = 2000
#: The settle-0 latency target's offered rate (issue 15: p99 <= 250 ms at 1,000 claims/s).
TARGET_RATE = 1000
LATENCY_S = float(os.environ.get("CLAIMWATCH_BENCH_LATENCY_SECONDS", "15"))
WARMUP_S = 3.0
#: Unmeasured claims sent after the measured span, at the same rate: the windows of the
#: last measured claims close as steady traffic closes them (on the claims' clock), not
#: on the ticks of an idle partition (settle + lateness + up to a tick period later)
COOLDOWN_S = 3.0
DRAIN_S = 30.0
WORK = Path(".cache/bench")
EXACTLY_ONCE = "not run: faust exactly_once stalls on tick records (docs/concepts.md#delivery)"


# ---------------------------------------------------------------------------- measurements


async def committed_rate(
    group: str, topic: str, target: dict[int, int], child: Child, timeout: float = 900.0
) -> dict[str, Any]:
    """Claims/s from the group's first committed offset until it reaches the target."""
    from aiokafka import TopicPartition

    tps = [TopicPartition(topic, p) for p in sorted(target)]
    total = sum(target.values())
    first: tuple[float, int] | None = None
    cpu_first: float | None = None
    deadline = time.monotonic() + timeout
    next_report = time.perf_counter() + 10.0
    async with admin_client() as admin:
        coordinator = await admin.find_coordinator(group)
        while time.monotonic() < deadline:
            child.check()
            offsets = await admin.list_consumer_group_offsets(group, coordinator, tps)
            now = time.perf_counter()
            done = sum(
                min(max(offsets[tp].offset, 0), target[tp.partition]) for tp in tps if tp in offsets
            )
            if first is None and done > 0:
                first, cpu_first = (now, done), child.cpu_s()
            if now >= next_report:
                note(f"{child.name}: {done:,}/{total:,} committed")
                next_report = now + 10.0
            if done >= total and first is not None:
                figures: dict[str, Any] = {"claims": total, "timed_from": "first commit"}
                seconds, counted = now - first[0], total - first[1]
                if counted == 0:  # all done by the first commit: time it from the start
                    seconds, counted = now - child.started, total
                    figures["timed_from"] = "process start"
                figures["counted"] = counted
                figures["seconds"] = round(seconds, 2)
                figures["claims_per_s"] = round(counted / seconds)
                cpu_last = child.cpu_s()
                if (
                    cpu_first is not None
                    and cpu_last is not None
                    and figures["timed_from"] != "process start"
                ):
                    # the process's own CPU time over the same span: steadier than the rate
                    # on a shared VM (time stolen by other tenants is not charged to it)
                    figures["cpu_us_per_claim"] = round(1e6 * (cpu_last - cpu_first) / counted)
                return figures
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{child.name}: offsets of {group} did not reach the end in {timeout}s")


def fresh_claims(
    facts: int, tag: str, clock: Callable[[], int] | None = None
) -> Iterator[Produced]:
    """Workload claims as keyed messages, endlessly: unique ids, observed_at = now.

    `clock` gives "now" in microseconds (default: the wall clock).
    """
    now = clock or (lambda: time.time_ns() // 1000)
    rounds = 0
    while True:
        for claim in claims(facts, 10, seed=rounds):
            claim["claim_id"] = f"{tag}-{rounds}-{claim['claim_id']}"
            claim["observed_at"] = format_rfc3339(now())
            key = f"{claim['subject']}|{claim['field']}".encode()
            yield key, orjson.dumps(claim), partition_for(key, PARTITIONS)
        rounds += 1


async def _tail(topics: list[str]) -> Any:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=env_bootstrap(), group_id=None)
    await consumer.start()
    tps = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
    consumer.assign(tps)
    await consumer.seek_to_end(*tps)
    for tp in tps:
        await consumer.position(tp)
    return consumer


def _percentile(ms: list[float], measured: int, q: float) -> float | None:
    """The q-quantile over every measured claim; None when it falls on an undecided one."""
    rank = max(0, min(measured - 1, int(q * measured + 0.5) - 1))
    return round(ms[rank], 1) if rank < len(ms) else None


async def paced_latency(
    claims_topic: str,
    out_topics: list[str],
    ids_of: Callable[[bytes], Iterable[str]],
    tag: str,
    rate: int,
    seconds: float,
    side: str,
) -> dict[str, Any]:
    """Send claims at `rate`/s; time each one sent in the measured `seconds` until named.

    The measured span lies between WARMUP_S and COOLDOWN_S of the same traffic, neither
    of them measured. After the last send the outputs are read for up to DRAIN_S more
    seconds; a claim with no output by then counts as slower than every decided one (so
    p99 is None when more than 1 % were not decided in time). `side` names the run's
    progress note.
    """
    note(f"{side}: {rate:,} claims/s for {WARMUP_S + seconds + COOLDOWN_S:.0f} s")
    consumer = await _tail(out_topics)
    producer = new_producer()
    await producer.start()
    sent: dict[str, float] = {}
    latencies: list[float] = []
    count = measured = 0
    finished: float | None = None

    async def send() -> None:
        nonlocal count, measured, finished
        source = fresh_claims(FACTS, tag)
        started = time.perf_counter()
        while (elapsed := time.perf_counter() - started) < WARMUP_S + seconds + COOLDOWN_S:
            while count < int(elapsed * rate):
                key, value, partition = next(source)
                if WARMUP_S <= elapsed < WARMUP_S + seconds:
                    sent[orjson.loads(value)["claim_id"]] = time.perf_counter()
                    measured += 1
                await producer.send(claims_topic, value, key=key, partition=partition)
                count += 1
            await asyncio.sleep(0.002)
        await producer.flush()
        finished = time.perf_counter()

    async def receive() -> None:
        while finished is None or (sent and time.perf_counter() < finished + DRAIN_S):
            batches = await consumer.getmany(timeout_ms=100, max_records=5000)
            now = time.perf_counter()
            for messages in batches.values():
                for message in messages:
                    for claim_id in ids_of(message.value or b""):
                        at = sent.pop(claim_id, None)
                        if at is not None:
                            latencies.append(now - at)

    try:
        await asyncio.gather(send(), receive())
    finally:
        await producer.stop()
        await consumer.stop()
    ms = sorted(1000 * x for x in latencies)
    return {
        "rate_per_s": rate,
        "sent": count,
        "measured": measured,
        "decided": len(ms),
        "p50_ms": _percentile(ms, measured, 0.50),
        "p99_ms": _percentile(ms, measured, 0.99),
        "max_ms": round(ms[-1], 1) if len(ms) == measured and ms else None,
    }


def decision_claim_ids(value: bytes) -> list[str]:
    return [c["claim_id"] for c in orjson.loads(value).get("claims", ())]


def passthrough_claim_id(value: bytes) -> list[str]:
    """The claim id of a passthrough output (a padded claim; no need to parse it all)."""
    start = value.find(b'"claim_id":"') + 12
    return [value[start : value.index(b'"', start)].decode()]


# ---------------------------------------------------------------------------- the run


@dataclass(slots=True)
class Run:
    """Names and children of one benchmark run (all under one fresh topic prefix)."""

    prefix: str = field(default_factory=lambda: f"cwbench-pipe-{uuid.uuid4().hex[:8]}.")
    children: list[Child] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return WORK / self.prefix.rstrip(".")

    @property
    def policy(self) -> Path:
        """The benchmark policy with settle 0 (written on first use)."""
        path = self.work / "policy-settle0.yaml"
        return path if path.exists() else settle_zero_policy(path)

    async def outputs(self, names: TopicNames) -> list[str]:
        """Every topic the worker writes but its claims topic (where it writes only ticks)."""
        async with admin_client() as admin:
            topics = await admin.list_topics()
        ours = (f"{names.prefix}pt.", f"{names.prefix}lat.")
        return sorted(
            t
            for t in topics
            if t.startswith(names.prefix) and t != names.claims and not t.startswith(ours)
        )

    def spawn(self, child: Child) -> Child:
        self.children.append(child)
        self.groups.append(child.name.split()[-1])
        return child.start()

    def cleanup(self) -> None:
        for child in self.children:
            with contextlib.suppress(Exception):
                child.stop()
        asyncio.run(delete_topics(self.prefix, self.groups))
        shutil.rmtree(self.work, ignore_errors=True)


async def _fan_out(
    run: Run, names: TopicNames, app_id: str, before: dict[str, int], claims_in: int
) -> tuple[list[list[Any]], dict[str, Any]]:
    """The worker's records per claim and mean sizes by topic → the passthrough's plan."""
    outputs = await run.outputs(names)
    counts = await end_offsets(outputs)
    sizes = await mean_sizes(outputs)
    plan: list[list[Any]] = []
    report: dict[str, Any] = {}
    for topic in outputs:
        role = topic.removeprefix(names.prefix).removeprefix(f"{app_id}.")
        rate = (counts[topic] - before.get(topic, 0)) / claims_in
        plan.append([f"{names.prefix}pt.{role}", rate, sizes[topic]])
        report[role] = {"per_claim": round(rate, 3), "mean_bytes": sizes[topic]}
    report["total_per_claim"] = round(sum(p[1] for p in plan), 3)
    return plan, report


async def _pt_topics(plan: list[list[Any]], extra: Iterable[str] = ()) -> None:
    topics = [p[0] for p in plan]
    compact = [t for t in topics if t.endswith(("resolutions", "changelog"))]
    await create_topics([*extra, *topics], compact)


#: Rounds of the backlog sides, run in turns (worker, passthrough, floors; then again):
#: each side's figure is its faster round, so one disturbed run does not make a ratio.
ROUNDS = int(os.environ.get("CLAIMWATCH_BENCH_ROUNDS", "2"))
#: The Faust floors after the passthrough, in the order run: name, note, spec additions.
_FLOORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("faust_floor", "the Faust floor (a Faust passthrough with the same fan-out)", {}),
    (
        "faust_floor_tables",
        "the Faust floor with tables (the facts and resolutions through tables)",
        {"tables": True},
    ),
    (
        "faust_floor_direct_tables",
        "the Faust floor with tables written directly (store, then one send)",
        {"tables": "direct"},
    ),
    (
        "faust_floor_plain_decider",
        "the Faust floor with direct tables and the plain decider",
        {"tables": "direct", "decider": "plain"},
    ),
)


async def throughput(run: Run) -> dict[str, Any]:
    """Claims/s of a worker over a pre-published backlog, then of its baselines over it.

    The policy has settle 0: in a backlog every claim arrives within seconds (the partition
    clock follows arrival), so with the default 2 s windows most decisions would wait for
    the tick records after the backlog, past the moment its offsets are committed. With
    settle 0 a claim's outputs are all written (Faust flushes) before its offset commits.
    Every side runs `ROUNDS` times in turns, each round with a group of its own; a side's
    figure is its faster round (the same rule for the worker and every baseline), and
    every round is reported.
    """
    names = TopicNames(run.prefix)
    await ensure_topics(env_bootstrap(), names, PARTITIONS)
    source = fresh_claims(FACTS, "t")
    published = await produce(names.claims, (next(source) for _ in range(CLAIMS)))
    ends = await _partition_ends(names.claims)
    if sum(ends.values()) != published:
        raise RuntimeError(f"{names.claims} holds {sum(ends.values())} records, sent {published}")
    note(f"published {published:,} claims over {FACTS:,} facts")
    rounds: list[dict[str, dict[str, Any]]] = []
    plan: list[list[Any]] = []
    fan_out: dict[str, Any] = {}
    pt_records = 0
    for number in range(1, max(1, ROUNDS) + 1):
        sides: dict[str, dict[str, Any]] = {}
        note(f"round {number}: starting the worker")
        app_id = f"{run.prefix}app{number}"
        child = run.spawn(worker(run.policy, run.prefix, app_id, free_port(), run.work))
        measured = await committed_rate(app_id, names.claims, ends, child)
        if number == 1:  # the fan-out of the first round's worker is every baseline's
            plan, fan_out = await _fan_out(run, names, app_id, {}, published)
            await _pt_topics(plan)
        sides["worker"] = {**measured, "peak_rss_mib": child.peak_mib()}
        child.stop()
        spec: dict[str, Any] = {
            "input": names.claims,
            "group": f"{run.prefix}pt{number}",
            "outputs": plan,
            "ready": str(run.work / f"pt{number}.ready"),
        }
        note(f"round {number}: starting the passthrough")
        pt = run.spawn(passthrough_child(spec, run.work))
        sides["passthrough"] = await committed_rate(spec["group"], names.claims, ends, pt)
        pt.stop()
        if number == 1:
            pt_records = sum((await end_offsets([p[0] for p in plan])).values())
        for index, (name, what, extra) in enumerate(_FLOORS):
            group = f"{run.prefix}f{index}r{number}"
            floor_spec: dict[str, Any] = {
                **spec,
                **extra,
                "group": group,
                "ready": str(run.work / group),
            }
            note(f"round {number}: starting {what}")
            ff = run.spawn(faust_floor_child(floor_spec, run.work))
            sides[name] = await committed_rate(group, names.claims, ends, ff)
            ff.stop()
        rounds.append(sides)
    best = {name: max((r[name] for r in rounds), key=_rate) for name in rounds[0]}
    rate = {name: figures["claims_per_s"] for name, figures in best.items()}
    worker_cpu = best["worker"].get("cpu_us_per_claim")
    return {
        "worker": best["worker"],
        "passthrough": {
            **best["passthrough"],
            "records_per_claim": round(pt_records / published, 3),
        },
        "ratio": _ratio(rate["worker"], rate["passthrough"]),
        "faust_floor": best["faust_floor"],
        "floor_ratio": _ratio(rate["faust_floor"], rate["passthrough"]),
        "ratio_to_floor": _ratio(rate["worker"], rate["faust_floor"]),
        "faust_floor_tables": best["faust_floor_tables"],
        "ratio_to_floor_tables": _ratio(rate["worker"], rate["faust_floor_tables"]),
        "faust_floor_direct_tables": best["faust_floor_direct_tables"],
        "ratio_to_floor_direct_tables": _ratio(rate["worker"], rate["faust_floor_direct_tables"]),
        # what a plain decider (bench.plain_stream) reaches on Faust with the same fan-out
        "faust_floor_plain_decider": best["faust_floor_plain_decider"],
        "plain_decider_ratio_to_floor_direct_tables": _ratio(
            rate["faust_floor_plain_decider"], rate["faust_floor_direct_tables"]
        ),
        "ratio_to_plain_decider": _ratio(rate["worker"], rate["faust_floor_plain_decider"]),
        # the same by CPU time per claim (a ratio of costs: plain decider's over the worker's)
        "cpu_ratio_to_plain_decider": _ratio(
            best["faust_floor_plain_decider"].get("cpu_us_per_claim"), worker_cpu
        ),
        "fan_out": fan_out,
        "rounds": [
            {
                name: {
                    "claims_per_s": f["claims_per_s"],
                    "cpu_us_per_claim": f.get("cpu_us_per_claim"),
                }
                for name, f in sides.items()
            }
            for sides in rounds
        ],
    }


def _rate(figures: dict[str, Any]) -> float:
    """A side's claims/s (the key its faster round is chosen by)."""
    return float(figures["claims_per_s"])


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 2) if numerator and denominator else None


async def _partition_ends(topic: str) -> dict[int, int]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=env_bootstrap(), group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: off for tp, off in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


def settle_zero_policy(path: Path) -> Path:
    """The benchmark policy with `settle: 0` on every field (decide on every claim)."""
    policy = yaml.safe_load(POLICY.read_text())
    policy["defaults"] = {**policy.get("defaults", {}), "settle": 0}
    for rule in policy["fields"].values():
        rule["settle"] = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


async def latency(run: Run, sustained: int) -> dict[str, Any]:
    """Claim-to-decision latency with settle 0 at `sustained`/s, TARGET_RATE/s and RATE/s.

    Both sides: the worker, then the passthrough with the worker's fan-out.
    """
    names = TopicNames(f"{run.prefix}lat.")
    app_id = f"{names.prefix}app"
    await ensure_topics(env_bootstrap(), names, PARTITIONS)
    port = free_port()
    child = run.spawn(worker(run.policy, names.prefix, app_id, port, run.work))
    await wait_healthy(child, port)
    rates = sorted({sustained, TARGET_RATE, RATE})
    worker_side: dict[str, Any] = {}
    plan: list[list[Any]] = []
    fan_out: dict[str, Any] = {}
    for n, rate in enumerate(rates):
        before = await end_offsets(await run.outputs(names))
        figures = await paced_latency(
            names.claims, [names.decisions], decision_claim_ids, f"w{n}", rate, LATENCY_S, "worker"
        )
        worker_side[f"at_{rate}_per_s"] = figures
        if n == 0:  # the outputs of a run the worker kept up with: the passthrough's plan
            plan, fan_out = await _fan_out(run, names, app_id, before, figures["sent"])
    worker_side["peak_rss_mib"] = child.peak_mib()
    child.stop()
    pt_in = f"{names.prefix}pt.claims"
    await _pt_topics(plan, [pt_in])
    ready = run.work / "pt-lat.ready"
    spec = {"input": pt_in, "group": f"{names.prefix}pt", "outputs": plan, "ready": str(ready)}
    pt = run.spawn(passthrough_child(spec, run.work))
    await wait_file(pt, ready)
    baseline: dict[str, Any] = {}
    for n, rate in enumerate(rates):
        baseline[f"at_{rate}_per_s"] = await paced_latency(
            pt_in,
            [p[0] for p in plan],
            passthrough_claim_id,
            f"p{n}",
            rate,
            LATENCY_S,
            "passthrough",
        )
    pt.stop()
    return {"worker": worker_side, "passthrough": baseline, "fan_out": fan_out}


#: How long the default-settle paced run offers RATE claims/s (after the warm-up).
PACED_S = float(os.environ.get("CLAIMWATCH_BENCH_PACED_SECONDS", "60"))


async def paced_default_settle(run: Run) -> dict[str, Any]:
    """RATE claims/s for PACED_S seconds to a worker on the benchmark policy as written.

    The policy keeps the default settle window (2 s), so a decision waits for its window.
    `held` says whether the worker kept up: every measured claim decided, and p99 no more
    than one second beyond the settle window (a worker falling behind builds a backlog,
    and its latencies grow through the run far past that).

    The same traffic then goes to the Faust floor with direct tables and the plain decider,
    sending the worker's records of this run (`paced_floor`): what a Faust worker that
    decides, written plainly, spends at this rate and fan-out, by share of a core.
    `cpu_ratio_to_paced_floor` is the worker's share over the floor's: a lower bound when
    the worker did not hold (one core caps what its event loop can use).
    """
    names = TopicNames(f"{run.prefix}paced.")
    app_id = f"{names.prefix}app"
    await ensure_topics(env_bootstrap(), names, PARTITIONS)
    port = free_port()
    child = run.spawn(worker(POLICY, names.prefix, app_id, port, run.work))
    await wait_healthy(child, port)
    figures = await _paced_share(
        child,
        paced_latency(
            names.claims,
            [names.decisions],
            decision_claim_ids,
            "d",
            RATE,
            PACED_S,
            "worker (default settle)",
        ),
    )
    figures["peak_rss_mib"] = child.peak_mib()
    plan, figures["fan_out"] = await _fan_out(run, names, app_id, {}, figures["sent"])
    child.stop()
    p99 = figures["p99_ms"]
    compiled = load_policy(POLICY)
    settle_ms = max(compiled.rule(name).settle_us for name in compiled.policy.fields) / 1000
    figures["settle_ms"] = settle_ms
    figures["held"] = bool(
        figures["decided"] == figures["measured"] and p99 is not None and p99 <= settle_ms + 1000
    )
    floor = await paced_floor(run, names, plan)
    figures["paced_floor"] = floor
    figures["cpu_ratio_to_paced_floor"] = _ratio(figures["cpu_share"], floor["cpu_share"])
    return figures


async def paced_floor(run: Run, names: TopicNames, plan: list[list[Any]]) -> dict[str, Any]:
    """The Faust floor with direct tables and the plain decider, paced as the worker was.

    It reads its own copy of the claims topic and sends `plan` (the worker's records per
    claim in its paced run), its decider's own decisions and changelog values among them;
    latency is timed to its decisions, as the worker's is.
    """
    source = f"{names.prefix}pf.claims"
    await _pt_topics(plan, [source])
    ready = run.work / "pf.ready"
    spec = {
        "input": source,
        "group": f"{names.prefix}pf",
        "outputs": plan,
        "ready": str(ready),
        "tables": "direct",
        "decider": "plain",
    }
    floor = run.spawn(faust_floor_child(spec, run.work))
    # the floor marks itself ready on its first record: one claim first, not measured
    await produce(source, itertools.islice(fresh_claims(FACTS, "pf-first"), 1))
    await wait_file(floor, ready)
    decisions = f"{names.prefix}pt.decisions"  # as `_fan_out` names the plan's topics
    figures = await _paced_share(
        floor,
        paced_latency(
            source,
            [decisions],
            decision_claim_ids,
            "f",
            RATE,
            PACED_S,
            "Faust floor + plain decider",
        ),
    )
    floor.stop()
    return figures


async def _paced_share(child: Child, paced: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """A paced run's figures and the share of a core `child` used over it (all threads)."""
    cpu_first, started = child.cpu_s(), time.perf_counter()
    figures = await paced
    cpu_last = child.cpu_s()
    if cpu_first is not None and cpu_last is not None:
        figures["cpu_share"] = round((cpu_last - cpu_first) / (time.perf_counter() - started), 2)
    return figures


def run() -> dict[str, Any]:
    """Throughput (ratio to the passthrough), latency with settle 0 and paced, peak memory."""
    bench = Run()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up when stopped
    try:
        speed = asyncio.run(throughput(bench))
        # A second latency point at half the worker's measured throughput (which it sustains).
        measured = speed["worker"]["claims_per_s"] or RATE
        sustained = max(50, min(RATE, measured // 2 // 50 * 50))
        delay = asyncio.run(latency(bench, sustained))
        paced = asyncio.run(paced_default_settle(bench))
    finally:
        bench.cleanup()
    peaks = [
        speed["worker"]["peak_rss_mib"],
        delay["worker"]["peak_rss_mib"],
        paced["peak_rss_mib"],
    ]
    return {
        "throughput": speed,
        "latency_settle0": delay,
        "paced_default_settle": paced,
        "worker_peak_rss_mib": max((x for x in peaks if x), default=None),
        "exactly_once": EXACTLY_ONCE,
    }


if __name__ == "__main__":
    print(json.dumps(run()))
