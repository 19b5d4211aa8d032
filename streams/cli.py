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
from streams.policy_file import MAX_POLICY_BYTES, PolicyError, load_policy

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
MaxPolicyBytesOption = Annotated[
    int, typer.Option("--max-policy-bytes", min=1, help="refuse a larger policy file (bytes)")
]


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"claimwatch: {message}", err=True)
    raise typer.Exit(code)


def _policy(path: Path, max_bytes: int) -> CompiledPolicy:
    try:
        return load_policy(path, max_bytes=max_bytes)
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
    max_policy_bytes: MaxPolicyBytesOption = MAX_POLICY_BYTES,
) -> None:
    """Resolve JSON-lines claims: one decision per fact, sorted by (subject, field)."""
    compiled = _policy(policy, max_policy_bytes)
    now_us = _now(now)
    if file == "-":
        batch = read_claims(sys.stdin.buffer, "<stdin>", compiled)
    else:
        try:
            with open(file, "rb") as handle:
                batch = read_claims(handle, file, compiled)
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


@app.command("compare-text")
def compare_text(
    file: Annotated[
        str, typer.Argument(help='JSON lines {"left": ..., "right": ...}; - or nothing for stdin')
    ] = "-",
) -> None:
    """Compare text passages: one verdict (conflict, rule, detail, duplicate) per input line."""
    import contextlib

    from streams.text_cmd import compare_stream

    with contextlib.ExitStack() as stack:
        try:
            handle = sys.stdin.buffer if file == "-" else stack.enter_context(open(file, "rb"))
        except OSError as exc:
            _fail(f"{file}: cannot read: {exc.strerror or exc}", 2)
        errors = compare_stream(handle, sys.stdout.buffer, "<stdin>" if file == "-" else file)
    for error in errors:
        typer.echo(f"claimwatch: {error}", err=True)
    if errors:
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
    app_id: Annotated[str, typer.Option(help="consumer group / app id")] = "claimwatch",
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
) -> None:
    """Run the stream worker: claims in; decisions, resolutions, conflicts and DLQ out."""
    from streams.settings import WorkerSettings
    from streams.worker import run_worker

    _policy(policy, max_policy_bytes)  # a bad policy: exit 2 before connecting anywhere
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
    if bootstrap:
        settings.bootstrap = bootstrap
    if topic_prefix is not None:
        settings.prefix = topic_prefix
    run_worker(settings)


@app.command()
def publish(
    file: Annotated[str, typer.Argument(help="JSON-lines claims; - for stdin")],
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    partitions: Annotated[
        int, typer.Option(help="partitions of the topics, if publish has to create them")
    ] = 4,
    sign_key_env: Annotated[
        str | None, typer.Option(help="sign every claim (HMAC-SHA256) with the key in this env var")
    ] = None,
    sign_key_file: Annotated[
        str | None, typer.Option(help="sign every claim with the key in this file")
    ] = None,
) -> None:
    """Send JSON-lines claims to the claims topic keyed by fact; invalid lines are not sent."""
    import asyncio
    import contextlib
    import logging

    from streams.publish_cmd import PublishFailed, publish_file
    from streams.settings import env_bootstrap, env_prefix
    from streams.signing_keys import client_key

    try:
        signing_key = client_key(sign_key_env, sign_key_file)
    except ValueError as exc:
        _fail(str(exc), 2)

    # retries (a just-created topic's leader moving) are not news; failed deliveries are reported
    logging.getLogger("aiokafka").setLevel(logging.ERROR)

    def report(error: object) -> None:
        typer.echo(f"claimwatch: {error}", err=True)

    with contextlib.ExitStack() as stack:
        try:
            handle = sys.stdin.buffer if file == "-" else stack.enter_context(open(file, "rb"))
        except OSError as exc:
            _fail(f"{file}: cannot read: {exc.strerror or exc}", 2)
        try:
            result = asyncio.run(
                publish_file(
                    handle,
                    "<stdin>" if file == "-" else file,
                    bootstrap=bootstrap or env_bootstrap(),
                    prefix=topic_prefix if topic_prefix is not None else env_prefix(),
                    partitions=partitions,
                    on_error=report,
                    signing_key=signing_key,
                )
            )
        except PublishFailed as exc:
            _fail(str(exc), 1)
        except KeyboardInterrupt:
            _fail("interrupted", 1)
    invalid = f"; {len(result.errors)} invalid line(s) not sent" if result.errors else ""
    typer.echo(f"sent {result.sent} claim(s) to {result.topic}{invalid}")
    if result.errors:
        raise typer.Exit(1)


@app.command()
def decisions(
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    from_beginning: Annotated[
        bool, typer.Option("--from-beginning", help="start at the oldest decision, not the end")
    ] = False,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep waiting for more")] = False,
    idle_timeout: Annotated[
        float, typer.Option(help="without --follow, stop after this many seconds of silence")
    ] = 5.0,
    field: Annotated[str | None, typer.Option(help="only this field")] = None,
    outcome: Annotated[
        str | None, typer.Option(help="only resolved, conflict, insufficient or rejected")
    ] = None,
    fact: Annotated[str | None, typer.Option(help="only this fact: SUBJECT|FIELD")] = None,
    since: Annotated[str | None, typer.Option(help="decided_at at or after (RFC 3339)")] = None,
    until: Annotated[str | None, typer.Option(help="decided_at at or before (RFC 3339)")] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False,
) -> None:
    """Tail the decisions topic (no consumer group), dropping repeated decision ids."""
    import asyncio

    from aiokafka.errors import KafkaError

    from streams.decisions_cmd import OUTCOMES, Filters, Printer, TopicMissing, run_decisions
    from streams.settings import env_bootstrap, env_prefix
    from streams.topics import TopicNames

    if outcome is not None and outcome not in OUTCOMES:
        _fail(f"--outcome: {outcome!r} is not one of {', '.join(OUTCOMES)}", 2)
    if fact is not None and "|" not in fact:
        _fail(f"--fact: {fact!r} is not SUBJECT|FIELD", 2)
    if idle_timeout < 0:
        _fail("--idle-timeout: must not be negative", 2)
    filters = Filters(
        field=field,
        outcome=outcome,
        fact=fact,
        since_us=_moment("--since", since),
        until_us=_moment("--until", until),
    )
    mode = "json" if json_lines else "table" if sys.stdout.isatty() else "plain"
    printer = Printer(mode)
    prefix = topic_prefix if topic_prefix is not None else env_prefix()
    try:
        tail = asyncio.run(
            run_decisions(
                bootstrap=bootstrap or env_bootstrap(),
                topic=TopicNames(prefix).decisions,
                filters=filters,
                from_beginning=from_beginning,
                follow=follow,
                idle_timeout_s=idle_timeout,
                printer=printer,
            )
        )
    except (TopicMissing, KafkaError) as exc:
        _fail(str(exc) or type(exc).__name__, 1)
    except KeyboardInterrupt:  # the way to end --follow
        raise typer.Exit(0) from None
    if mode == "table":
        repeats = f"; {tail.repeats} repeated id(s) dropped" if tail.repeats else ""
        typer.echo(f"{printer.count} decision(s){repeats}", err=True)


@app.command()
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
    from schemas.durations import parse_duration
    from streams import simulate as sim

    if scenario not in sim.SCENARIOS:
        _fail(f"--scenario: {scenario!r} is not one of {', '.join(sim.SCENARIOS)}", 2)
    try:
        duration_us = parse_duration(duration) if duration is not None else None
    except ValueError as exc:
        _fail(f"--duration: {exc}", 2)
    if duration_us is not None and duration_us <= 0:
        _fail("--duration: must be positive", 2)
    claims, ground_truth = sim.simulate(scenario, seed, duration_us)
    sim.write_claims(claims, sys.stdout.buffer)
    target = truth if truth is not None else sim.truth_path_for()
    if target is None:
        typer.echo("claimwatch: no ground truth written (stdout is no file; use --truth)", err=True)
        return
    try:
        sim.write_truth(ground_truth, target)
    except OSError as exc:
        _fail(f"{target}: cannot write: {exc.strerror or exc}", 1)


@app.command()
def argue(
    file: Annotated[str, typer.Argument(help="framework file, ICCMA 2023 or apx; - for stdin")],
    semantics: Annotated[
        str, typer.Option(help="grounded, complete, preferred or stable")
    ] = "grounded",
    fmt: Annotated[
        str | None, typer.Option("--format", help="i23 or apx (default: from the file)")
    ] = None,
) -> None:
    """Print the extensions of an argumentation framework as JSON: sorted lists of names."""
    import json

    from streams.argue_io import FORMATS, ArgueFormatError, read_framework
    from streams.core.argue import Semantics, named_extensions

    if semantics not in {s.value for s in Semantics}:
        _fail(
            f"--semantics: {semantics!r} is not one of {', '.join(s.value for s in Semantics)}", 2
        )
    if fmt is not None and fmt not in FORMATS:
        _fail(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}", 2)
    name = "<stdin>" if file == "-" else file
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"{name}: cannot read: {getattr(exc, 'strerror', None) or exc}", 2)
    try:
        framework = read_framework(text, name, fmt)
    except ArgueFormatError as exc:
        _fail(str(exc), 2)
    try:
        found = named_extensions(framework, semantics)
    except (MemoryError, RecursionError) as exc:
        _fail(f"{name}: {semantics} extensions: {type(exc).__name__}", 1)
    typer.echo(json.dumps(found, ensure_ascii=False))


def _moment(flag: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        return parse_rfc3339(raw)
    except TimestampError as exc:
        _fail(f"{flag}: {exc}", 2)


def main() -> None:
    """Console-script entry point."""
    app()


def _register_audit() -> None:
    from streams import cli_audit

    app.command()(cli_audit.replay)
    app.command()(cli_audit.explain)


_register_audit()


def _register_merge() -> None:
    from streams import merge_cmd

    app.command("merge")(merge_cmd.merge_files)


_register_merge()
