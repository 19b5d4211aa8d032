"""What the MCP gateway adds to a tool call: the same calls through it and made directly.

Started as the walkthrough starts them (docs/agents.md, docs/gateway.md), on a fresh topic
prefix: a worker on examples/mcp/policy.yaml (default store and settings; the billing key
in its environment); examples/mcp/server.py (`bench.gateway_upstream`, over streamable
HTTP, so that one upstream process answers both sides); and `claimwatch gateway` over it,
started over stdio by the SDK's client as an agent starts it, with the example's mapping
of `get_invoice_status` (signed) and no mapping for `get_report_status`.

One SDK client (`mcp.Client`) then makes tool calls at RATE calls/s, open loop (each call
starts at its own time, whether the earlier ones have returned or not), in turns of
TURN_S seconds, TURNS turns a side, the sides in rotation:

- `direct`: `get_invoice_status` straight to the upstream;
- `gateway`: `get_invoice_status` through the gateway (mapped: claim, decide, annotate);
- `passthrough`: `get_report_status` through the gateway (unmapped: the proxy hop alone;
  the two tools do the same work upstream).

Every call asks about a new invoice, so each mapped call is a new fact whose owner's claim
is decided on arrival. A call's latency runs from its scheduled start to its result. Per
side: p50/p90/p99/max; the differences to `direct`; whether issue 42's target holds
(arbitration adds at most TARGET_P50_MS at p50 and TARGET_P99_MS at p99); what the
results carried (decision outcomes, unarbitrated notes); each turn's figures; and the CPU
time each process (gateway, worker, upstream, this client) spent per call on each side.

    .venv/bin/python -m bench.gateway_bench
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from claimwatch.wire.kafka import env_bootstrap
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from bench.children import CLAIMWATCH, Child, cpu_s, free_port, wait_healthy, worker
from bench.kafka_io import delete_topics

RATE = int(os.environ.get("CLAIMWATCH_BENCH_GATEWAY_RATE", "50"))
TURN_S = float(os.environ.get("CLAIMWATCH_BENCH_GATEWAY_TURN_SECONDS", "5"))
TURNS = int(os.environ.get("CLAIMWATCH_BENCH_GATEWAY_TURNS", "6"))
#: Seconds of unmeasured calls per side before the measured turns (connections, first claim).
WARM_S = 3.0
#: Seconds the worker runs before the first call, so its partition clocks tick.
WORKER_WARM_S = 3.0
#: Issue 42's target: what arbitration may add to a tool call at RATE calls/s (ms).
TARGET_P50_MS = 100.0
TARGET_P99_MS = 250.0
POLICY = Path("examples/mcp/policy.yaml")
GATEWAY_EXAMPLE = Path("examples/mcp/gateway.yaml")
MAPPED, UNMAPPED = "get_invoice_status", "get_report_status"
SIDES = ("direct", "gateway", "passthrough")
WORK = Path(".cache/bench")


def note(text: str) -> None:
    """Progress on stderr (stdout carries only the figures)."""
    print(f"  gateway: {text}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class Side:
    """One side's calls: latencies (ms), what each result carried, CPU per process."""

    ms: list[float] = field(default_factory=list)
    carried: Counter[str] = field(default_factory=Counter)
    turns: list[dict[str, Any]] = field(default_factory=list)
    cpu_s: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))


def carried(result: CallToolResult) -> str:
    """What a result came back with: its decision's outcome, or why it has none."""
    note_ = (result.structured_content or {}).get("claimwatch")
    if result.is_error:
        return "tool error"
    if note_ is None:
        return "no claimwatch note"
    if note_.get("arbitrated"):
        return f"decided: {note_.get('outcome')}"
    return f"unarbitrated: claim {note_.get('claim')}"


async def paced(
    call: Callable[[int], Awaitable[CallToolResult]], seconds: float
) -> list[tuple[float, str]]:
    """RATE calls/s for `seconds`, open loop: each call's ms from its scheduled start."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def one(index: int, at: float) -> tuple[float, str]:
        result = await call(index)
        return 1000 * (loop.time() - at), carried(result)

    tasks = []
    for index in range(int(RATE * seconds)):
        at = start + index / RATE
        await asyncio.sleep(max(0.0, at - loop.time()))
        tasks.append(asyncio.create_task(one(index, at)))
    return await asyncio.gather(*tasks)


def percentile(ms: list[float], q: float) -> float:
    """The nearest-rank q-quantile of sorted `ms`."""
    return round(ms[max(0, min(len(ms) - 1, int(q * len(ms) + 0.5) - 1))], 1)


def spread(ms: list[float]) -> dict[str, float | int]:
    ordered = sorted(ms)
    return {
        "calls": len(ordered),
        "p50_ms": percentile(ordered, 0.50),
        "p90_ms": percentile(ordered, 0.90),
        "p99_ms": percentile(ordered, 0.99),
        "max_ms": round(ordered[-1], 1),
    }


def gateway_config(path: Path, upstream_url: str, worker_url: str, prefix: str) -> Path:
    """The example gateway file on this run's worker, prefix and upstream; one tool mapped."""
    config = yaml.safe_load(GATEWAY_EXAMPLE.read_text())
    config.update(worker_url=worker_url, bootstrap=env_bootstrap(), topic_prefix=prefix)
    config["servers"] = {"billing": {"url": upstream_url, "timeout": "30s"}}
    config["tools"] = {MAPPED: config["tools"][MAPPED]}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def children_of(name: str) -> list[int]:
    """The pids of this process's children whose command line contains `name`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            ppid = int(text[text.rindex(")") + 2 :].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if ppid == os.getpid() and name in cmdline:
                found.append(int(stat.parent.name))
    return found


def pid_of(child: Child) -> int:
    if child.proc is None:
        raise RuntimeError(f"{child.name} was not started")
    return child.proc.pid


@contextlib.asynccontextmanager
async def through_gateway(config: Path, key: str, log: Path) -> AsyncIterator[Client]:
    """The SDK's client on a gateway it starts over stdio (as an agent does), stderr to `log`."""
    params = StdioServerParameters(
        command=str(CLAIMWATCH),
        args=["gateway", "--config", str(config)],
        env={"MCP_DEMO_BILLING_KEY": key},
        cwd=str(Path.cwd()),
    )
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            yield client


async def measure(work: Path) -> dict[str, Any]:
    prefix = f"cwbench-gw-{uuid.uuid4().hex[:8]}."
    app_id = prefix.rstrip(".")
    key = secrets.token_hex(32)
    port, upstream_port = free_port(), free_port()
    child = worker(POLICY, prefix, app_id, port, work)
    child.env["MCP_DEMO_BILLING_KEY"] = key
    upstream = Child(
        "upstream",
        [sys.executable, "-m", "bench.gateway_upstream", str(upstream_port)],
        work / "upstream.log",
    )
    try:
        child.start()
        upstream.start()
        await wait_healthy(child, port)
        await asyncio.sleep(WORKER_WARM_S)
        url = f"http://127.0.0.1:{upstream_port}/mcp"
        config = gateway_config(work / "gateway.yaml", url, f"http://127.0.0.1:{port}", prefix)
        async with (
            Client(url, cache=None) as direct,
            through_gateway(config, key, work / "gateway.log") as gateway,
        ):
            (gateway_pid,) = children_of(" gateway --config ")
            run = uuid.uuid4().hex[:6]

            def caller(side: str, turn: int) -> Callable[[int], Awaitable[CallToolResult]]:
                client = direct if side == "direct" else gateway
                tool = UNMAPPED if side == "passthrough" else MAPPED
                return lambda i: client.call_tool(
                    tool, {"invoice_id": f"INV-{run}-{side}{turn}-{i}"}
                )

            note(f"warming up: {WARM_S:g} s of calls a side")
            for side in SIDES:
                await paced(caller(side, -1), WARM_S)
            pids = {"gateway": gateway_pid, "worker": pid_of(child), "upstream": pid_of(upstream)}
            sides = {side: Side() for side in SIDES}
            for turn in range(TURNS):
                for side in SIDES:
                    note(f"turn {turn + 1}/{TURNS}: {side}, {RATE} calls/s for {TURN_S:g} s")
                    before = {name: cpu_s(number) or 0.0 for name, number in pids.items()}
                    own = time.process_time()
                    calls = await paced(caller(side, turn), TURN_S)
                    figures = sides[side]
                    figures.cpu_s["client"] += time.process_time() - own
                    for name, number in pids.items():
                        figures.cpu_s[name] += (cpu_s(number) or 0.0) - before[name]
                    figures.ms.extend(ms for ms, _ in calls)
                    figures.carried.update(what for _, what in calls)
                    figures.turns.append(spread([ms for ms, _ in calls]))
            child.check()
    finally:
        child.stop()
        upstream.stop()
        await delete_topics(prefix, [app_id])
    return report(sides)


def report(sides: dict[str, Side]) -> dict[str, Any]:
    """Per side: spread, turns, what came back, CPU ms per call; differences; the target."""
    figures = {side: spread(s.ms) for side, s in sides.items()}

    def minus(side: str, base: str) -> dict[str, float]:
        return {
            q: round(float(figures[side][q]) - float(figures[base][q]), 1)
            for q in ("p50_ms", "p99_ms")
        }

    added = minus("gateway", "direct")
    added_p50, added_p99 = added["p50_ms"], added["p99_ms"]
    met = added_p50 <= TARGET_P50_MS and added_p99 <= TARGET_P99_MS
    mapped = sides["gateway"].carried
    decided = sum(n for what, n in mapped.items() if what.startswith("decided"))
    return {
        "rate_per_s": RATE,
        "turn_s": TURN_S,
        "turns_per_side": TURNS,
        "calls": "each a new invoice (a new fact); the mapped tool's claim signed, "
        "decided on arrival",
        **{
            side: {
                **figures[side],
                "turns": sides[side].turns,
                "carried": dict(sides[side].carried),
                "cpu_ms_per_call": {
                    name: round(1000 * seconds / len(sides[side].ms), 2)
                    for name, seconds in sides[side].cpu_s.items()
                },
            }
            for side in SIDES
        },
        "gateway_minus_direct": added,
        "passthrough_minus_direct": minus("passthrough", "direct"),
        # the arbitration alone: the mapped tool through the gateway vs the proxy hop alone
        "gateway_minus_passthrough": minus("gateway", "passthrough"),
        "decided_share": round(decided / len(sides["gateway"].ms), 3),
        "target": {
            "added_p50_ms_at_most": TARGET_P50_MS,
            "added_p99_ms_at_most": TARGET_P99_MS,
            "met": met,
            "says": (
                f"{'met' if met else 'not met'}: through the gateway a call took "
                f"{added_p50:+.1f} ms at p50 and {added_p99:+.1f} ms at p99 against the "
                f"same calls made directly, at {RATE} calls/s"
            ),
        },
    }


def run() -> dict[str, Any]:
    work = WORK / f"gateway-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True, exist_ok=True)
    figures = asyncio.run(measure(work))  # on a failure the logs stay in `work`
    shutil.rmtree(work, ignore_errors=True)
    return figures


if __name__ == "__main__":
    print(json.dumps(run()))
