"""`claimwatch resolve`: decide a file of claims offline, one decision per fact."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from claimwatch.audit.resolve_file import read_claims, resolve_lines
from claimwatch.audit.resolve_parallel import resolve_shared
from claimwatch.audit.shares import default_jobs, wants_parallel
from claimwatch.cli.common import (
    JobsOption,
    MaxPolicyBytesOption,
    PolicyOption,
    now_or_fail,
    open_input,
    policy_or_fail,
)
from claimwatch.policy.source import MAX_POLICY_BYTES
from claimwatch.worker.collector import no_collection


def resolve(
    policy: PolicyOption,
    file: Annotated[str, typer.Argument(help="JSON-lines claims; - or nothing for stdin")] = "-",
    now: Annotated[
        str | None, typer.Option(help="RFC 3339 clock time of the observation (default: now)")
    ] = None,
    max_policy_bytes: MaxPolicyBytesOption = MAX_POLICY_BYTES,
    jobs: JobsOption = None,
) -> None:
    """Resolve JSON-lines claims: one decision per fact, sorted by (subject, field)."""
    compiled = policy_or_fail(policy, max_policy_bytes)
    now_us = now_or_fail(now)
    out = sys.stdout.buffer
    with no_collection(), open_input(file) as (handle, name):
        processes = jobs if jobs is not None else default_jobs()
        if wants_parallel(file, processes):
            errors = resolve_shared(file, name, compiled, now_us, processes, out)
        else:
            batch = read_claims(handle, name, compiled)
            for line in resolve_lines(batch, compiled, now_us):
                out.write(line)
            errors = batch.errors
    out.flush()
    for error in errors:
        typer.echo(f"claimwatch: {error}", err=True)
    if errors:
        raise typer.Exit(1)
