"""`claimwatch simulate`: write a simulated claim stream with injected incidents."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from aiokafka.errors import KafkaError

from claimwatch.cli.common import BootstrapOption, PrefixOption, fail
from claimwatch.client.publisher import Publisher
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.durations import parse_duration
from claimwatch.sim import live
from claimwatch.sim import simulate as sim
from claimwatch.wire.topics import BrokerUnavailable, MissingTopic


def simulate(
    scenario: Annotated[
        str,
        typer.Option(
            help="clean, conflict-spike, replica-lag, silent-source, mixed, or demo (the"
            " scripted story of `make run`, for examples/demo-policy.yaml)"
        ),
    ],
    seed: Annotated[int, typer.Option(help="random seed; the same seed gives the same stream")] = 0,
    duration: Annotated[
        str | None, typer.Option(help="stream length, e.g. 30m or 6h (default per scenario)")
    ] = None,
    truth: Annotated[
        Path | None,
        typer.Option(help="ground-truth JSON (default: NAME.truth.json beside stdout's file)"),
    ] = None,
    live_run: Annotated[
        bool,
        typer.Option(
            "--live",
            help=(
                "publish the claims instead, each at its moment of the scenario laid onto the"
                " wall clock (observed_at moved to it, ids suffixed per run); print the ground"
                " truth as it happens"
            ),
        ),
    ] = False,
    speed: Annotated[
        float, typer.Option(help="with --live: scenario seconds per wall-clock second")
    ] = 1.0,
    bootstrap: BootstrapOption = None,
    topic_prefix: PrefixOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="with --live: truth as JSON")] = False,
) -> None:
    """Write a simulated claim stream (JSON lines, observed_at order) with injected incidents."""
    names = (*sim.SCENARIOS, "demo")
    if scenario not in names:
        fail(f"--scenario: {scenario!r} is not one of {', '.join(names)}", 2)
    try:
        duration_us = parse_duration(duration) if duration is not None else None
    except ValueError as exc:
        fail(f"--duration: {exc}", 2)
    if duration_us is not None and duration_us <= 0:
        fail("--duration: must be positive", 2)
    if not speed > 0 or speed > 10_000:
        fail(f"--speed: must be above 0 and at most 10000, got {speed:g}", 2)
    claims, ground_truth = sim.simulate(scenario, seed, duration_us)
    if live_run:
        _live(claims, ground_truth, speed, bootstrap, topic_prefix, json_out)
        return
    sim.write_claims(claims, sys.stdout.buffer)
    target = truth if truth is not None else sim.truth_path_for()
    if target is None:
        typer.echo("claimwatch: no ground truth written (stdout is no file; use --truth)", err=True)
        return
    try:
        sim.write_truth(ground_truth, target)
    except OSError as exc:
        fail(f"{target}: cannot write: {exc.strerror or exc}", 1)


def _live(
    claims: list[dict[str, Any]],
    truth: dict[str, Any],
    speed: float,
    bootstrap: str | None,
    prefix: str | None,
    json_out: bool,
) -> None:
    """Publish the scenario in real time; Ctrl-C stops it (exit 0, what was sent is sent)."""
    start_us = time.time_ns() // 1000 + 1_000_000  # a second to connect
    events = live.schedule(claims, truth, start_us, speed)
    ends = parse_rfc3339(truth["end"]) - parse_rfc3339(truth["start"])
    typer.echo(
        f"simulate: {len(claims):,} claims of {truth['scenario']} over "
        f"{ends / 1e6 / speed:,.0f} s (speed {speed:g})",
        err=True,
    )

    async def run() -> int:
        async with Publisher(bootstrap, prefix) as publisher:

            async def send(batch: Sequence[dict[str, Any]]) -> None:
                for claim in batch:
                    await publisher.publish(claim)

            return await live.run_live(events, send, _print_line, json_out)

    try:
        sent = asyncio.run(run())
    except KafkaError as exc:
        fail(f"cannot publish: {exc or type(exc).__name__}", 1)
    except (MissingTopic, BrokerUnavailable) as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        typer.echo("simulate: stopped", err=True)
        return
    typer.echo(f"simulate: {sent:,} claims published", err=True)


def _print_line(line: str) -> None:
    print(line, flush=True)
