"""Would uvloop speed the worker up? The worker over one backlog on each loop, in turns.

Not part of the default `make bench` (uvloop is not a dependency): install it into the
venv (`.venv/bin/pip install uvloop`), then `CLAIMWATCH_BENCH=loop make bench`. The uvloop
side is the same worker command with uvloop's event-loop policy set before it starts.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from bench.children import Child, free_port, worker
from bench.kafka_io import produce
from bench.pipeline_bench import CLAIMS, FACTS, Run, _partition_ends, committed_rate, fresh_claims
from streams.wire.kafka import env_bootstrap
from streams.wire.topics import TopicNames, ensure_topics

_UVLOOP = (
    "import sys, asyncio, uvloop; asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); "
    "from streams.cli.main import main; sys.argv[0] = 'claimwatch'; main()"
)
ROUNDS = 2


def _on_uvloop(child: Child) -> Child:
    """The same worker command run under uvloop's event loop policy."""
    return Child(child.name, [sys.executable, "-c", _UVLOOP, *child.command[1:]], child.log)


async def _run(run: Run) -> dict[str, Any]:
    import uvloop  # noqa: F401  (fails loudly here when it is not installed)

    names = TopicNames(run.prefix)
    await ensure_topics(env_bootstrap(), names, 4)
    source = fresh_claims(FACTS, "l")
    await produce(names.claims, (next(source) for _ in range(CLAIMS)))
    ends = await _partition_ends(names.claims)
    rates: dict[str, list[int]] = {"asyncio": [], "uvloop": []}
    for n in range(2 * ROUNDS):
        loop = ("asyncio", "uvloop")[n % 2]
        app_id = f"{run.prefix}app{n}"
        child = worker(run.policy, run.prefix, app_id, free_port(), run.work)
        child = run.spawn(_on_uvloop(child) if loop == "uvloop" else child)
        measured = await committed_rate(app_id, names.claims, ends, child)
        child.stop()
        rates[loop].append(int(measured["claims_per_s"]))
    best = {loop: max(values) for loop, values in rates.items()}
    return {"claims_per_s": rates, "ratio_best": round(best["uvloop"] / best["asyncio"], 2)}


def run() -> dict[str, Any]:
    bench = Run()
    try:
        return asyncio.run(_run(bench))
    finally:
        bench.cleanup()


if __name__ == "__main__":
    import json

    print(json.dumps(run()))
