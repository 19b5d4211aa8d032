"""`make bench`: every benchmark, each as a ratio to a baseline run in the same invocation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench import state_size
from bench.pipeline_bench import CLAIMS as PIPELINE_CLAIMS
from bench.pipeline_bench import FACTS as PIPELINE_FACTS
from bench.workload import write

OUT = Path("bench/out")


def _side(module: str, *args: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-m", module, *args], check=True, capture_output=True, text=True
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def core(facts: int = 40_000, per_fact: int = 5) -> dict[str, object]:
    """`claimwatch resolve` vs the plain baseline; the live-state size; the claims step.

    The step is the worker's claims runtime vs the streaming baseline (`bench.plain_stream`).
    """
    from bench import resolve_bench

    path = write(Path(f".cache/bench/claims-{facts}x{per_fact}.jsonl"), facts, per_fact)
    figures = resolve_bench.run(path, facts * per_fact)
    # the worker's claims step vs the streaming baseline, on the pipeline workload
    step = _side("bench.plain_stream", "step", str(PIPELINE_CLAIMS), str(PIPELINE_FACTS))
    return {**figures, "state": state_size.measure(), "plain_stream_step": step}


def pipeline() -> dict[str, object]:
    """Issue 3: one worker end to end vs an aiokafka passthrough; latency; peak memory."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.pipeline_bench"],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def replay(facts: int, per_fact: int) -> dict[str, object]:
    """Issue 5: replay of the core workload file vs resolve; of a topic vs a plain read.

    Also the file ratio of the plain baselines (`bench.plain_stream` vs `plain_resolve`).
    """
    from bench import replay_bench

    path = write(Path(f".cache/bench/claims-{facts}x{per_fact}.jsonl"), facts, per_fact)
    figures = replay_bench.run(path)
    # the file ratio when both sides are written plainly: the plain replay decides every
    # claim (settle 0), a resolve every fact once (claimwatch's replay of this file, on the
    # benchmark policy's 2 s windows, makes about one decision a fact: the claims are all
    # observed within a minute, so most windows close at the end of the input)
    return {**figures, "plain_baselines": _side("bench.plain_stream", "replay", str(path))}


def compiled() -> dict[str, object]:
    """Issue 15: the core compiled with mypyc vs pure Python (resolve; the claims runtime)."""
    path = write(Path(".cache/bench/claims-40000x5.jsonl"), 40_000, 5)
    return _side("bench.compiled", str(path))


def restart() -> dict[str, object]:
    """Issue 13: restart after SIGKILL with 100,000 live facts, rocksdb vs memory store."""
    return _side("bench.restart_bench")


def gateway() -> dict[str, object]:
    """Issue 42: tool calls through the MCP gateway vs the same calls made directly."""
    return _side("bench.gateway_bench")


def main() -> int:
    """Run the benchmarks named in CLAIMWATCH_BENCH (default: all) and write bench/out/."""
    facts = int(os.environ.get("CLAIMWATCH_BENCH_FACTS", "100000"))
    per_fact = int(os.environ.get("CLAIMWATCH_BENCH_PER_FACT", "10"))
    wanted = os.environ.get(
        "CLAIMWATCH_BENCH", "core,compiled,pipeline,replay,text,argue,restart,gateway"
    )
    chosen = {name.strip() for name in wanted.split(",") if name.strip()}
    known = {
        "core",
        "compiled",
        "pipeline",
        "replay",
        "text",
        "argue",
        "restart",
        "loop",
        "instructions",
        "ablate",
        "gateway",
    }
    unknown = chosen - known
    if unknown:
        print(f"CLAIMWATCH_BENCH: unknown benchmark(s) {', '.join(sorted(unknown))}")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {}
    if "core" in chosen:
        print("core: claimwatch resolve vs the plain baseline, 200,000 claims ...", flush=True)
        results["core"] = figures = core()
        print(json.dumps(figures, indent=2), flush=True)
    if "compiled" in chosen:
        print("compiled: streams/claimwatch/core built with mypyc vs pure Python ...", flush=True)
        results["compiled"] = figures = compiled()
        print(json.dumps(figures, indent=2), flush=True)
    if "pipeline" in chosen:
        print("pipeline: one worker vs an aiokafka passthrough on the broker ...", flush=True)
        results["pipeline"] = figures = pipeline()
        print(json.dumps(figures, indent=2), flush=True)
    if "replay" in chosen:
        print(f"replay: {facts * per_fact:,} claims from a file, and from a topic ...", flush=True)
        results["replay"] = figures = replay(facts, per_fact)
        print(json.dumps(figures, indent=2), flush=True)
    if "text" in chosen:
        from bench import text_bench

        print("text: the passage comparator over the peer suite, >= 100,000 pairs ...", flush=True)
        results["text"] = figures = text_bench.run(min_pairs=100_000)
        print(json.dumps(figures, indent=2), flush=True)
    if "argue" in chosen:
        from bench import argue_bench

        print("argue: grounded and preferred extensions vs the reference ...", flush=True)
        results["argue"] = figures = argue_bench.run()
        print(json.dumps(figures, indent=2), flush=True)
    if "instructions" in chosen:  # not in the default set: it needs valgrind installed
        print("instructions: the claims runtime's instructions per claim, counted ...", flush=True)
        results["instructions"] = figures = _side("bench.instructions")
        print(json.dumps(figures, indent=2), flush=True)
    if "loop" in chosen:  # not in the default set: six more worker runs
        print("loop: the worker on uvloop (shipped) vs --loop asyncio, in turns ...", flush=True)
        results["loop"] = figures = _side("bench.loop_ab")
        print(json.dumps(figures, indent=2), flush=True)
    if "ablate" in chosen:  # not in the default set: fifteen worker runs
        print("ablate: the worker with parts switched off vs the plain decider ...", flush=True)
        results["ablate"] = figures = _side("bench.ablate")
        print(json.dumps(figures, indent=2), flush=True)
    if "restart" in chosen:
        print("restart: SIGKILL and restart with 100,000 live facts, both stores ...", flush=True)
        results["restart"] = figures = restart()
        print(json.dumps(figures, indent=2), flush=True)
    if "gateway" in chosen:
        print("gateway: MCP tool calls through the gateway vs made directly ...", flush=True)
        results["gateway"] = figures = gateway()
        print(json.dumps(figures, indent=2), flush=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
