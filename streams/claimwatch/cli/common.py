"""What every command shares: one way to fail, the policy and time options, input files."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, NoReturn

import typer

from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import TimestampError, parse_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.policy.source import PolicyError

PolicyOption = Annotated[Path, typer.Option("--policy", "-p", help="policy YAML file")]
MaxPolicyBytesOption = Annotated[
    int, typer.Option("--max-policy-bytes", min=1, help="refuse a larger policy file (bytes)")
]
#: `resolve` and `replay`: processes a large file is shared out among (None: the default)
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help=(
            "processes sharing out a file of 4 MiB or more, or a topic range of 20,000"
            " records or more (replay; default: the cores, at most 4)"
        ),
    ),
]
BootstrapOption = Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")]
PrefixOption = Annotated[
    str | None,
    typer.Option("--topic-prefix", help="prefix of every topic name [env CLAIMWATCH_TOPIC_PREFIX]"),
]


def fail(message: str, code: int) -> NoReturn:
    """Print `claimwatch: message` to stderr and exit with `code` (2 usage, 1 runtime)."""
    typer.echo(f"claimwatch: {message}", err=True)
    raise typer.Exit(code)


def policy_or_fail(path: Path, max_bytes: int) -> CompiledPolicy:
    """The compiled policy; exit 2 naming file, line and key when it cannot be used."""
    try:
        return load_policy(path, max_bytes=max_bytes)
    except PolicyError as exc:
        fail(str(exc), 2)


def now_or_fail(raw: str | None) -> int:
    """`--now` in microseconds (default: the wall clock); exit 2 when it is no RFC 3339 time."""
    if raw is None:
        return parse_rfc3339(datetime.now(UTC).isoformat())
    try:
        return parse_rfc3339(raw)
    except TimestampError as exc:
        fail(f"--now: {exc}", 2)


def moment(flag: str, raw: str | None) -> int | None:
    """An optional RFC 3339 flag in microseconds; exit 2 naming the flag when it is invalid."""
    if raw is None:
        return None
    try:
        return parse_rfc3339(raw)
    except TimestampError as exc:
        fail(f"{flag}: {exc}", 2)


@contextlib.contextmanager
def open_input(file: str) -> Iterator[tuple[IO[bytes], str]]:
    """The binary input (`-` is stdin) and its display name; exit 2 when it cannot be read."""
    if file == "-":
        yield sys.stdin.buffer, "<stdin>"
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        fail(f"{file}: cannot read: {exc.strerror or exc}", 2)
    with handle:
        yield handle, file
