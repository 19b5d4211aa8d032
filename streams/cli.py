"""The `claimwatch` command line: exit 0 ok, 2 bad usage or bad policy, 1 runtime failure."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from streams.codec import dumps_line
from streams.core.policy import CompiledPolicy
from streams.core.timeutil import TimestampError, parse_rfc3339
from streams.offline import read_claims, resolve_batch
from streams.policy_file import PolicyError, load_policy

app = typer.Typer(
    name="claimwatch",
    help="Streaming conflict monitor for AI-agent tool results.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Streaming conflict monitor for AI-agent tool results."""


PolicyOption = Annotated[Path, typer.Option("--policy", "-p", help="policy YAML file")]


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"claimwatch: {message}", err=True)
    raise typer.Exit(code)


def _policy(path: Path) -> CompiledPolicy:
    try:
        return load_policy(path)
    except PolicyError as exc:
        _fail(str(exc), 2)


def _now(raw: str | None) -> int:
    if raw is None:
        return parse_rfc3339(datetime.now(UTC).isoformat())
    try:
        return parse_rfc3339(raw)
    except TimestampError as exc:
        _fail(f"--now: {exc}", 2)


@app.command()
def resolve(
    policy: PolicyOption,
    file: Annotated[str, typer.Argument(help="JSON-lines claims; - or nothing for stdin")] = "-",
    now: Annotated[
        str | None, typer.Option(help="RFC 3339 clock time of the observation (default: now)")
    ] = None,
) -> None:
    """Resolve JSON-lines claims: one decision per fact, sorted by (subject, field)."""
    compiled = _policy(policy)
    now_us = _now(now)
    if file == "-":
        batch = read_claims(sys.stdin.buffer, "<stdin>")
    else:
        try:
            with open(file, "rb") as handle:
                batch = read_claims(handle, file)
        except OSError as exc:
            _fail(f"{file}: cannot read: {exc.strerror or exc}", 2)
    out = sys.stdout.buffer
    for record in resolve_batch(batch, compiled, now_us):
        out.write(dumps_line(record))
    out.flush()
    for error in batch.errors:
        typer.echo(f"claimwatch: {error}", err=True)
    if batch.errors:
        raise typer.Exit(1)


@app.command()
def worker(
    policy: PolicyOption,
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    web_port: Annotated[int, typer.Option(help="HTTP port (/metrics, /health, /facts)")] = 6066,
    partitions: Annotated[int, typer.Option(help="partitions of the claims topic")] = 4,
    store: Annotated[str, typer.Option(help="table store: rocksdb:// or memory://")] = "rocksdb://",
    data_dir: Annotated[Path, typer.Option(help="where the table store lives")] = Path(
        ".cache/worker"
    ),
    guarantee: Annotated[
        str, typer.Option(help="at_least_once (default) or exactly_once")
    ] = "at_least_once",
    app_id: Annotated[str, typer.Option(help="consumer group / app id")] = "claimwatch",
) -> None:
    """Run the stream worker: claims in; decisions, resolutions, conflicts and DLQ out."""
    from streams.settings import WorkerSettings
    from streams.worker import run_worker

    _policy(policy)  # refuse a bad policy with exit 2 before connecting anywhere
    settings = WorkerSettings(
        policy_path=policy,
        web_port=web_port,
        partitions=partitions,
        store=store,
        data_dir=data_dir,
        guarantee=guarantee,
        app_id=app_id,
    )
    if bootstrap:
        settings.bootstrap = bootstrap
    if topic_prefix is not None:
        settings.prefix = topic_prefix
    run_worker(settings)


def main() -> None:
    """Console-script entry point."""
    app()
