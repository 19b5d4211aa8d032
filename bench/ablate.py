"""What parts of the worker's work cost a claim: the worker with parts switched off.

Not part of the default `make bench` (`CLAIMWATCH_BENCH=ablate make bench`, about 15
minutes). Over a 50,000-claim backlog (settle 0, as the pipeline benchmark's; every run on
a backlog and topics of its own), in turns, ROUNDS times each: the worker as shipped, the
Faust floor with direct tables and the plain decider (`bench.faust_floor`, with the fan-out
of the first worker run), and the worker with each set of parts in `SETS` switched off
(`bench/ablation/sitecustomize.py` names them). Each side reports its claims/s and its
process's CPU time per claim, the steadier figure on this shared VM; the parts' costs are
differences of median CPU times.

It answers one question: of what the worker spends a claim beyond the plain decider on
Faust, how much each part takes. The ablated workers make wrong records; nothing reads them.
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any, Final

from claimwatch.wire.kafka import env_bootstrap
from claimwatch.wire.topics import TopicNames, ensure_topics

from bench.children import Child, faust_floor_child, free_port, worker
from bench.kafka_io import produce
from bench.pipeline_bench import (
    CLAIMS,
    FACTS,
    Run,
    _fan_out,
    _partition_ends,
    _pt_topics,
    committed_rate,
    fresh_claims,
)

ROUNDS: Final = 3
#: the folder whose sitecustomize switches parts off
ABLATION: Final = Path(__file__).resolve().parent / "ablation"
#: side name -> the parts it switches off ("" for the worker as shipped)
SETS: Final = {
    "worker": "",
    "no_lag": "lag",
    "no_metrics": "metrics",
    "no_ids_reason": "ids,reason",
    "no_all": "lag,metrics,ids,reason",
}
PLAIN: Final = "plain_decider"


def ablated(child: Child, parts: str) -> Child:
    """The worker child with `parts` switched off (itself when none)."""
    if parts:
        child.env = {
            "PYTHONPATH": f"{ABLATION}:{Path(__file__).resolve().parent.parent}",
            "CLAIMWATCH_ABLATE": parts,
        }
    return child


async def _side(side: str, n: int, fan_out: list[list[Any]]) -> tuple[dict[str, Any], list[Any]]:
    """One run of `side` over a backlog of its own (round `n`), and the worker's fan-out.

    Every run has topics of its own: workers of one prefix would read each other's
    detector records (`alerts.input`), and each later run would do more than the first.
    `fan_out` is the plain decider's: [role, records a claim, mean bytes] per output.
    """
    run = Run()
    try:
        names = TopicNames(run.prefix)
        await ensure_topics(env_bootstrap(), names, 4)
        source = fresh_claims(FACTS, "a")
        published = await produce(names.claims, (next(source) for _ in range(CLAIMS)))
        ends = await _partition_ends(names.claims)
        group = f"{run.prefix}{side}{n}"
        if side == PLAIN:
            plan = [[f"{names.prefix}pt.{role}", rate, size] for role, rate, size in fan_out]
            await _pt_topics(plan)
            spec: dict[str, Any] = {
                "input": names.claims,
                "group": group,
                "outputs": plan,
                "ready": str(run.work / f"{group}.ready"),
                "tables": "direct",
                "decider": "plain",
            }
            child = run.spawn(faust_floor_child(spec, run.work))
        else:
            made = worker(run.policy, run.prefix, group, free_port(), run.work)
            child = run.spawn(ablated(made, SETS[side]))
        measured = await committed_rate(group, names.claims, ends, child)
        child.stop()
        made_fan_out: list[Any] = []
        if side != PLAIN and not fan_out:
            plan, _ = await _fan_out(run, names, group, {}, published)
            made_fan_out = [[t.rsplit(".pt.", 1)[1], rate, size] for t, rate, size in plan]
        return measured, made_fan_out
    finally:
        await asyncio.to_thread(run.cleanup)


async def _run() -> dict[str, Any]:
    sides = [*SETS, PLAIN]
    rates: dict[str, list[int]] = {side: [] for side in sides}
    cpu: dict[str, list[int]] = {side: [] for side in sides}
    fan_out: list[list[Any]] = []
    for n in range(ROUNDS):
        for side in sides:
            measured, made = await _side(side, n, fan_out)
            fan_out = fan_out or made
            rates[side].append(int(measured["claims_per_s"]))
            cpu[side].append(int(measured.get("cpu_us_per_claim", 0)))
    median = {side: statistics.median(values) for side, values in cpu.items()}
    return {
        "claims_per_s": rates,
        "cpu_us_per_claim": cpu,
        "median_cpu_us_per_claim": median,
        # what each side spends a claim beyond the plain decider on Faust (µs, medians)
        "beyond_plain_decider_us": {s: round(median[s] - median[PLAIN]) for s in SETS},
        "part_us": {s: round(median["worker"] - median[s]) for s in SETS if s != "worker"},
        "plain_decider_fan_out": fan_out,
    }


def run() -> dict[str, Any]:
    return asyncio.run(_run())


if __name__ == "__main__":
    import json

    print(json.dumps(run()))
