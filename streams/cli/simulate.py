"""`claimwatch simulate`: write a simulated claim stream with injected incidents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from schemas.durations import parse_duration
from streams.cli.common import (
    fail,
)
from streams.sim import simulate as sim


def simulate(
    scenario: Annotated[
        str, typer.Option(help="clean, conflict-spike, replica-lag, silent-source or mixed")
    ],
    seed: Annotated[int, typer.Option(help="random seed; the same seed gives the same stream")] = 0,
    duration: Annotated[
        str | None, typer.Option(help="stream length, e.g. 30m or 6h (default per scenario)")
    ] = None,
    truth: Annotated[
        Path | None,
        typer.Option(help="ground-truth JSON (default: NAME.truth.json beside stdout's file)"),
    ] = None,
) -> None:
    """Write a simulated claim stream (JSON lines, observed_at order) with injected incidents."""
    if scenario not in sim.SCENARIOS:
        fail(f"--scenario: {scenario!r} is not one of {', '.join(sim.SCENARIOS)}", 2)
    try:
        duration_us = parse_duration(duration) if duration is not None else None
    except ValueError as exc:
        fail(f"--duration: {exc}", 2)
    if duration_us is not None and duration_us <= 0:
        fail("--duration: must be positive", 2)
    claims, ground_truth = sim.simulate(scenario, seed, duration_us)
    sim.write_claims(claims, sys.stdout.buffer)
    target = truth if truth is not None else sim.truth_path_for()
    if target is None:
        typer.echo("claimwatch: no ground truth written (stdout is no file; use --truth)", err=True)
        return
    try:
        sim.write_truth(ground_truth, target)
    except OSError as exc:
        fail(f"{target}: cannot write: {exc.strerror or exc}", 1)
