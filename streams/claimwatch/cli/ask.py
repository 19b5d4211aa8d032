"""`claimwatch ask SUBJECT FIELD`: a fact's current decision, or the one covering given claims."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from claimwatch.audit.explain import explain
from claimwatch.cli.common import fail
from claimwatch.client.facts import (
    Answer,
    ClaimRefused,
    FactPages,
    WorkerBusy,
    WorkerUnavailable,
    checked_worker_url,
)
from claimwatch.core.covering import QueryError, covering_ids, wait_seconds


async def _ask(
    url: str, subject: str, field: str, ids: tuple[str, ...] | None, wait: float
) -> Answer:
    async with FactPages(url) as pages:
        return await pages.ask(subject, field, ids, wait)


def ask(
    subject: Annotated[str, typer.Argument(help="the fact's subject, e.g. invoice:INV-1")],
    field: Annotated[str, typer.Argument(help="the fact's field, e.g. payment_status")],
    covering: Annotated[
        str | None,
        typer.Option(help="claim ids (comma-separated) the decision must list"),
    ] = None,
    wait: Annotated[
        str | None,
        typer.Option(help="seconds to wait for a decision covering them (at most 30)"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the decision as JSON")] = False,
    worker_url: Annotated[
        str | None,
        typer.Option(
            help="a worker's HTTP address [env CLAIMWATCH_WORKER_URL; default http://127.0.0.1:6066]"
        ),
    ] = None,
) -> None:
    """Print a fact's current decision, or the one covering given claims (exit 1 if none).

    A claim the worker dead-lettered (it will never be decided) exits 1 at once with the
    worker's reason, as does a worker turning the request away (too many waiting).
    """
    try:
        ids = covering_ids(covering)
        seconds = wait_seconds(wait)
    except QueryError as exc:
        fail(str(exc).replace("`covering`", "--covering").replace("`wait`", "--wait"), 2)
    try:
        url = checked_worker_url(worker_url)
    except ValueError as exc:
        fail(str(exc) if worker_url is None else f"--worker-url: {exc}", 2)
    try:
        answer = asyncio.run(_ask(url, subject, field, ids, seconds))
    except (WorkerUnavailable, ClaimRefused, WorkerBusy, ValueError) as exc:
        fail(str(exc), 1)
    if answer.decision is not None:
        typer.echo(
            json.dumps(answer.decision, sort_keys=True) if json_out else explain(answer.decision)
        )
    if answer.status == 404:
        fail(f"no decision for {subject}|{field}", 1)
    if answer.status == 408:
        waited = f" within {seconds:g} s" if seconds else ""
        fail(f"no decision for {subject}|{field} lists {', '.join(answer.missing)}{waited}", 1)
