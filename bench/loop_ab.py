"""The worker's event loop: the shipped uvloop against `--loop asyncio`, over one backlog.

Not part of the default `make bench` (`CLAIMWATCH_BENCH=loop make bench`). The same worker
command runs in turns on each loop, ROUNDS times each, each run with a group of its own,
and reports its claims/s and its process's CPU time per claim (steadier than the rate on
this shared VM): the ratios take each loop's best run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from claimwatch.wire.kafka import env_bootstrap
from claimwatch.wire.topics import TopicNames, ensure_topics

from bench.children import Child, free_port, worker
from bench.kafka_io import produce
from bench.pipeline_bench import CLAIMS, FACTS, Run, _partition_ends, committed_rate, fresh_claims

ROUNDS = 3
LOOPS = ("asyncio", "uvloop")


def _on_loop(child: Child, loop: str) -> Child:
    """The worker command as shipped (uvloop), or told to run on asyncio."""
    if loop == "uvloop":
        return child
    return Child(child.name, [*child.command, "--loop", loop], child.log)


async def _run(run: Run) -> dict[str, Any]:
    names = TopicNames(run.prefix)
    await ensure_topics(env_bootstrap(), names, 4)
    source = fresh_claims(FACTS, "l")
    await produce(names.claims, (next(source) for _ in range(CLAIMS)))
    ends = await _partition_ends(names.claims)
    rates: dict[str, list[int]] = {loop: [] for loop in LOOPS}
    cpu: dict[str, list[int]] = {loop: [] for loop in LOOPS}
    for n in range(len(LOOPS) * ROUNDS):
        loop = LOOPS[n % len(LOOPS)]
        app_id = f"{run.prefix}app{n}"
        child = run.spawn(
            _on_loop(worker(run.policy, run.prefix, app_id, free_port(), run.work), loop)
        )
        measured = await committed_rate(app_id, names.claims, ends, child)
        child.stop()
        rates[loop].append(int(measured["claims_per_s"]))
        cpu[loop].append(int(measured.get("cpu_us_per_claim", 0)))
    best = {loop: max(values) for loop, values in rates.items()}
    least = {loop: min(values) for loop, values in cpu.items()}
    return {
        "claims_per_s": rates,
        "cpu_us_per_claim": cpu,
        "ratio_best": round(best["uvloop"] / best["asyncio"], 2),
        "cpu_ratio_least": round(least["uvloop"] / least["asyncio"], 2)
        if least["asyncio"]
        else None,
    }


def run() -> dict[str, Any]:
    bench = Run()
    try:
        return asyncio.run(_run(bench))
    finally:
        bench.cleanup()


if __name__ == "__main__":
    import json

    print(json.dumps(run()))
