"""`claimwatch worker`: run the stream worker."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from claimwatch.cli.common import (
    MaxPolicyBytesOption,
    PolicyOption,
    policy_or_fail,
)
from claimwatch.policy.source import MAX_POLICY_BYTES
from claimwatch.worker.loop import LOOPS
from claimwatch.worker.settings import DEFAULT_STORE, WorkerSettings


def worker(
    policy: PolicyOption,
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    web_port: Annotated[int, typer.Option(help="HTTP port (/metrics, /health, /facts)")] = 6066,
    web_host: Annotated[
        str | None,
        typer.Option(
            help="host other workers and clients reach this one at"
            " [env CLAIMWATCH_WEB_HOST; default 127.0.0.1]"
        ),
    ] = None,
    web_bind: Annotated[
        str | None,
        typer.Option(
            help="address the HTTP server binds, e.g. 0.0.0.0 in a container"
            " [env CLAIMWATCH_WEB_BIND; default: the web host]"
        ),
    ] = None,
    partitions: Annotated[int, typer.Option(help="partitions of the claims topic")] = 4,
    store: Annotated[
        str, typer.Option(help="table store: rocksdb:// or memory://")
    ] = DEFAULT_STORE,
    data_dir: Annotated[Path, typer.Option(help="where the table store lives")] = Path(
        ".cache/worker"
    ),
    app_id: Annotated[
        str | None,
        typer.Option(
            help="consumer group and local state name (default: claimwatch for the prefix"
            " claimwatch., else claimwatch-<prefix>)"
        ),
    ] = None,
    standby_replicas: Annotated[
        int, typer.Option(help="warm standby copies of each table partition on other workers")
    ] = 0,
    health_broker_timeout: Annotated[
        float, typer.Option(help="/health is 503 once the broker has not answered this long (s)")
    ] = 30.0,
    instance_id: Annotated[
        str | None,
        typer.Option(help="static group member id (default: host:web-port:app-id)"),
    ] = None,
    max_policy_bytes: MaxPolicyBytesOption = MAX_POLICY_BYTES,
    loop: Annotated[
        str | None,
        typer.Option(help="event loop: uvloop or asyncio (default: $CLAIMWATCH_LOOP, else uvloop)"),
    ] = None,
) -> None:
    """Run the stream worker: claims in; decisions, resolutions, conflicts and DLQ out."""
    policy_or_fail(policy, max_policy_bytes)  # a bad policy: exit 2 before connecting anywhere
    settings = WorkerSettings(
        policy_path=policy,
        web_port=web_port,
        partitions=partitions,
        store=store,
        data_dir=data_dir,
        app_id=app_id,
        standby_replicas=standby_replicas,
        health_broker_timeout_s=health_broker_timeout,
        instance_id=instance_id,
        max_policy_bytes=max_policy_bytes,
    )
    if web_host is not None:
        settings.web_host = web_host
    if web_bind is not None:
        settings.web_bind = web_bind
    if loop is not None:
        settings.loop = loop
    if settings.loop not in LOOPS:
        typer.echo(
            f"claimwatch: event loop {settings.loop!r} (--loop or CLAIMWATCH_LOOP): "
            f"choose one of {', '.join(LOOPS)}",
            err=True,
        )
        raise typer.Exit(2)
    # imported here, not at the top: Faust takes about a second to import, and every other
    # command (registered beside this one) would pay for it at each start. After the loop
    # is checked: importing Faust reads `--loop` from the command line itself, and fails
    # on a loop it does not know.
    from claimwatch.worker.run import run_worker

    if bootstrap:
        settings.bootstrap = bootstrap
    if topic_prefix is not None:
        settings.prefix = topic_prefix
    run_worker(settings)
