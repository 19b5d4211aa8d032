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
  the two tools do the same work upstream);
- `in_agent`: `get_invoice_status` straight to the upstream, then mapped, signed and
  decided in this process with `claimwatch.Client.decide`, as examples/mcp/client.py
  does without a gateway (the decision's wait on its own);
- `governed`: `get_invoice_status` through a second gateway whose governance stage checks
  each result (a PII scan, the shipped PII pack on a real OPA server and a trust record:
  `bench.governed`) before it is arbitrated.

Every call asks about a new invoice: each claim (the owner's, signed) is a new fact,
decided on arrival. A call's latency runs from its scheduled start to its result. Per
side: p50/p90/p99/max; the differences to `direct`; whether issue 42's target holds
(arbitration adds at most TARGET_P50_MS at p50 and TARGET_P99_MS at p99: `gateway`
against `direct`); what the
results carried (decision outcomes, unarbitrated notes); each turn's figures; and the CPU
time each process (gateway, worker, upstream, this client) spent per call on each side.

    .venv/bin/python -m bench.gateway_bench     # or: CLAIMWATCH_BENCH=gateway make bench

CLAIMWATCH_BENCH_GATEWAY_RATE, _TURN_SECONDS and _TURNS change RATE, TURN_S and TURNS
(50 calls/s, 5 s, 6: 30 s a side).
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from claimwatch.client.client import Client as CwClient
from claimwatch.client.client import DecisionTimeout
from claimwatch.client.mcp_adapter import ToolMapping, claim_from_result, load_mappings
from claimwatch.gateway.config import load_config
from claimwatch.policy.signing_keys import client_key
from claimwatch.wire.kafka import env_bootstrap
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from bench.children import (
    CLAIMWATCH,
    Child,
    children_of,
    cpu_s,
    free_port,
    only,
    pid_of,
    wait_healthy,
    worker,
)
from bench.governed import governed_gateway, governed_policy, opa_server, trust_billing
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
SIDES = ("direct", "gateway", "passthrough", "in_agent", "governed")
MAPPINGS = Path("examples/mcp/mappings.yaml")
KEY_ENV = "MCP_DEMO_BILLING_KEY"
WORK = Path(".cache/bench")
#: The two gateways' files in the run's work directory (their processes are found by them).
WORK_CONFIG, GOVERNED_CONFIG = "gateway.yaml", "governed.yaml"


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
    governance = (note_.get("governance") or {}).get("result")
    if governance is not None and not note_.get("arbitrated"):
        return f"governance {governance.get('applied')}, unarbitrated"
    if governance is not None:
        return f"governance {governance.get('applied')}, decided: {note_.get('outcome')}"
    if note_.get("arbitrated"):
        return f"decided: {note_.get('outcome')}"
    return f"unarbitrated: claim {note_.get('claim')}"


async def paced(call: Callable[[int], Awaitable[str]], seconds: float) -> list[tuple[float, str]]:
    """RATE calls/s for `seconds`, open loop: each call's ms from its scheduled start.

    `call(index)` makes one call and says what it came back with.
    """
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def one(index: int, at: float) -> tuple[float, str]:
        what = await call(index)
        return 1000 * (loop.time() - at), what

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


@contextlib.asynccontextmanager
async def through_gateway(config: Path, log: Path) -> AsyncIterator[Client]:
    """The SDK's client on a gateway it starts over stdio (as an agent does), stderr to `log`."""
    params = StdioServerParameters(
        command=str(CLAIMWATCH),
        args=["gateway", "--config", str(config)],
        env={KEY_ENV: os.environ[KEY_ENV]},  # a stdio server gets only what it is given
        cwd=str(Path.cwd()),
    )
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            yield client


@dataclass(slots=True)
class Agent:
    """The bench's sessions: to the upstream, to the gateway, and claimwatch's own client."""

    direct: Client
    gateway: Client
    governed: Client
    claimwatch: CwClient
    mapping: ToolMapping
    key: bytes | None
    #: seconds: the gateway's decide timeout (its file's), for the decisions made in the agent
    decide_timeout: float
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    def caller(self, side: str, turn: int) -> Callable[[int], Awaitable[str]]:
        """One side's call of index `i` in `turn` (each about an invoice of its own)."""

        async def call(i: int) -> str:
            arguments = {"invoice_id": f"INV-{self.run}-{side}{turn}-{i}"}
            if side == "in_agent":
                return await self.in_agent(arguments)
            client = {"direct": self.direct, "governed": self.governed}.get(side, self.gateway)
            tool = UNMAPPED if side == "passthrough" else MAPPED
            return carried(await client.call_tool(tool, arguments))

        return call

    async def in_agent(self, arguments: dict[str, Any]) -> str:
        """The call made directly, then mapped, signed and decided in the agent (no gateway).

        As examples/mcp/client.py does it, but asking for the decision on arrival as the
        gateway does, with the gateway's decide timeout.
        """
        result = await self.direct.call_tool(MAPPED, arguments)
        now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        claim = claim_from_result(
            result,
            MAPPED,
            self.mapping,
            arguments=arguments,
            now=now,
            signing_key=self.key,
            decide="on_arrival",  # signed over: `decide()` cannot add it to a signed claim
        )
        try:
            decided = await self.claimwatch.decide([claim], timeout=self.decide_timeout)
        except DecisionTimeout:
            return "unarbitrated: DecisionTimeout"
        (decision,) = decided.values()
        return f"decided: {decision['outcome']}"


async def measure(work: Path) -> dict[str, Any]:
    prefix = f"cwbench-gw-{uuid.uuid4().hex[:8]}."
    app_id = prefix.rstrip(".")
    os.environ[KEY_ENV] = secrets.token_hex(32)  # the walkthrough's `export`
    port, upstream_port = free_port(), free_port()
    policy = governed_policy(POLICY, work / "policy.yaml")
    child = worker(policy, prefix, app_id, port, work)
    opa = opa_server(opa_port := free_port(), work)
    upstream = Child(
        "upstream",
        [sys.executable, "-m", "bench.gateway_upstream", str(upstream_port)],
        work / "upstream.log",
    )
    mapping = load_mappings(MAPPINGS).tools[MAPPED]
    signing = mapping.signing
    key = client_key(signing.env, signing.file) if signing is not None else None
    sides = {side: Side() for side in SIDES}
    try:
        child.start()
        upstream.start()
        opa.start()
        await wait_healthy(child, port)
        await wait_healthy(opa, opa_port)
        await asyncio.sleep(WORKER_WARM_S)
        url = f"http://127.0.0.1:{upstream_port}/mcp"
        worker_url = f"http://127.0.0.1:{port}"
        config = gateway_config(work / WORK_CONFIG, url, worker_url, prefix)
        opa_url = f"http://127.0.0.1:{opa_port}"
        stage = governed_gateway(config, policy, opa_url, work / GOVERNED_CONFIG)
        async with CwClient(worker_url, env_bootstrap(), prefix) as claimwatch:
            await trust_billing(claimwatch)
            async with (
                Client(url, cache=None) as direct,
                through_gateway(config, work / "gateway.log") as gateway,
                through_gateway(stage, work / "governed.log") as governed,
            ):
                timeout = load_config(config).settings.decide_timeout
                agent = Agent(direct, gateway, governed, claimwatch, mapping, key, timeout)
                await run_sides(agent, child, upstream, opa, sides)
    finally:
        child.stop()
        upstream.stop()
        opa.stop()
        await delete_topics(prefix, [app_id])
    return report(sides)


async def run_sides(
    agent: Agent, child: Child, upstream: Child, opa: Child, sides: dict[str, Side]
) -> None:
    """Warm every side up, then the measured turns, the sides in rotation."""
    pids = {
        "gateway": only(children_of(f"{WORK_CONFIG} ")),
        "governed_gateway": only(children_of(f"{GOVERNED_CONFIG} ")),
        "worker": pid_of(child),
        "upstream": pid_of(upstream),
        "opa": pid_of(opa),
    }
    note(f"warming up: {WARM_S:g} s of calls a side")
    for side in SIDES:
        await paced(agent.caller(side, -1), WARM_S)
    for turn in range(TURNS):
        for side in SIDES:
            note(f"turn {turn + 1}/{TURNS}: {side}, {RATE} calls/s for {TURN_S:g} s")
            await timed_turn(sides[side], pids, agent.caller(side, turn))
    child.check()


async def timed_turn(
    side: Side, pids: dict[str, int], call: Callable[[int], Awaitable[str]]
) -> None:
    """One turn of a side: its calls' latencies and results, and each process's CPU time."""
    before = {name: cpu_s(number) or 0.0 for name, number in pids.items()}
    own = time.process_time()
    calls = await paced(call, TURN_S)
    side.cpu_s["client"] += time.process_time() - own
    for name, number in pids.items():
        side.cpu_s[name] += (cpu_s(number) or 0.0) - before[name]
    side.ms.extend(ms for ms, _ in calls)
    side.carried.update(what for _, what in calls)
    side.turns.append(spread([ms for ms, _ in calls]))


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

    def decided_share(side: str) -> float:
        decided = sum(n for what, n in sides[side].carried.items() if what.startswith("decided"))
        return round(decided / len(sides[side].ms), 3)

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
        # the governance stage alone: the same mapped tool with and without it
        "governed_minus_gateway": minus("governed", "gateway"),
        "governed_minus_direct": minus("governed", "direct"),
        "passthrough_minus_direct": minus("passthrough", "direct"),
        # the arbitration alone: the mapped tool through the gateway vs the proxy hop alone
        "gateway_minus_passthrough": minus("gateway", "passthrough"),
        # the decision asked for in the agent's own process, as before the gateway
        "in_agent_minus_direct": minus("in_agent", "direct"),
        "gateway_minus_in_agent": minus("gateway", "in_agent"),
        "decided_share": {side: decided_share(side) for side in ("gateway", "in_agent")},
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
