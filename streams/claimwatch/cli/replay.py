"""`claimwatch replay`: decide a recorded claim stream under a policy, and diff.

With `--verdicts` it re-decides the verdicts topic instead (the checks' signals of each
request, `claimwatch.audit.replay_verdicts`) and writes the verdicts as JSON lines.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import IO, Annotated

import typer
from aiokafka.errors import KafkaConnectionError, KafkaError
from rich.console import Console
from rich.table import Table

from claimwatch.audit.diff import NEEDS as DIFF_NEEDS
from claimwatch.audit.diff import Diff, diff
from claimwatch.audit.recorded import recorded_decisions
from claimwatch.audit.replay_alerts import replay_alerts
from claimwatch.audit.replay_file import replay_file
from claimwatch.audit.replay_request import Outputs, ReplayRequest
from claimwatch.audit.replay_topic import refuse_live_topic, replay_topic_any, write_topic
from claimwatch.audit.replay_verdicts import replay_verdicts_topic
from claimwatch.audit.shares import default_jobs
from claimwatch.cli.common import JobsOption, PrefixOption, fail
from claimwatch.cli.topics import prefix_or_env, topic_named
from claimwatch.core.argue.verdicts import VerdictConfig
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import TimestampError, parse_rfc3339
from claimwatch.policy.loading import load_policy
from claimwatch.policy.source import MAX_POLICY_BYTES, PolicyError
from claimwatch.wire.codec import dumps_line
from claimwatch.wire.topics import TopicNames, broker_unavailable
from claimwatch.worker.collector import no_collection, one_pass


def _ms(raw: str | None, flag: str) -> int | None:
    if raw is None:
        return None
    try:
        return parse_rfc3339(raw) // 1000
    except TimestampError as exc:
        fail(f"{flag}: {exc}", 2)


def replay(
    policy: Annotated[Path, typer.Option("--policy", "-p", help="policy YAML to decide under")],
    input: Annotated[Path | None, typer.Option("--input", help="JSON-lines claims file")] = None,
    from_beginning: Annotated[
        bool, typer.Option(help="read the claims topic from its start")
    ] = False,
    since: Annotated[str | None, typer.Option("--from", help="RFC 3339 start (topic)")] = None,
    until: Annotated[str | None, typer.Option("--to", help="RFC 3339 end (topic)")] = None,
    topic: Annotated[
        str | None,
        typer.Option(help="topic (default: <prefix>claims; with --verdicts, <prefix>verdicts)"),
    ] = None,
    verdicts: Annotated[
        bool,
        typer.Option(
            "--verdicts",
            help="re-decide the verdicts topic (checks' signals) instead of the claims",
        ),
    ] = False,
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: PrefixOption = None,
    partitions: Annotated[int, typer.Option(help="partitions for a file replay")] = 4,
    jobs: JobsOption = None,
    out: Annotated[str, typer.Option("--out", help="decisions JSON lines: FILE or -")] = "-",
    to_topic: Annotated[str | None, typer.Option(help="also send decisions to this topic")] = None,
    alerts: Annotated[
        Path | None, typer.Option("--alerts", help="write the detectors' alerts here (JSONL)")
    ] = None,
    diff_against: Annotated[
        str | None,
        typer.Option(
            help="recorded decisions: JSON-lines FILE or TOPIC (`decisions`: the prefix's)"
        ),
    ] = None,
    changes: Annotated[Path | None, typer.Option(help="write the change list here")] = None,
    checkpoint: Annotated[Path | None, typer.Option(help="resume a topic replay")] = None,
    max_policy_bytes: Annotated[
        int, typer.Option("--max-policy-bytes", min=1, help="refuse a larger policy file (bytes)")
    ] = MAX_POLICY_BYTES,
) -> None:
    """Re-decide a claim stream under a policy, on the partition clock, and diff it."""
    # aiokafka logs transient metadata errors (an output topic being auto-created) at ERROR;
    # real failures raise and are reported below as one line with exit 1
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        compiled = load_policy(policy, max_bytes=max_policy_bytes)
    except PolicyError as exc:
        fail(str(exc), 2)
    prefix = prefix_or_env(topic_prefix)
    if verdicts:
        unused = {
            "--input": input,
            "--to": until,
            "--to-topic": to_topic,
            "--alerts": alerts,
            "--diff-against": diff_against,
            "--changes": changes,
            "--checkpoint": checkpoint,
        }
        given = [flag for flag, value in unused.items() if value is not None]
        if given:
            fail(f"--verdicts replays the verdicts topic: {', '.join(given)} do not apply", 2)
        if not (from_beginning or since):
            fail("--verdicts needs --from-beginning or --from TIME", 2)
        where = topic_named(topic, prefix) if topic is not None else TopicNames(prefix).verdicts
        _replay_verdicts(compiled, where, _ms(since, "--from"), bootstrap, prefix, out)
        return
    if diff_against is not None and not Path(diff_against).exists():
        diff_against = topic_named(diff_against, prefix)
    if topic is not None:
        topic = topic_named(topic, prefix)
    if (input is None) == (not (from_beginning or since)):
        fail("give either --input FILE or --from-beginning / --from TIME", 2)
    if to_topic is not None:
        try:
            refuse_live_topic(to_topic, prefix)
        except ValueError as exc:
            fail(str(exc), 2)
    if checkpoint is not None and out == "-":
        fail("--checkpoint needs --out FILE (the output is resumed too)", 2)
    if input is not None:
        try:
            input.open("rb").close()
        except OSError as exc:
            fail(f"{input}: cannot read: {exc.strerror or exc}", 2)
    req = ReplayRequest(
        policy=compiled,
        input=input,
        topic=topic or TopicNames(prefix).claims,
        since_ms=_ms(since, "--from"),
        until_ms=_ms(until, "--to"),
        bootstrap=bootstrap,
        partitions=partitions,
        out=None if out == "-" else Path(out),
        to_topic=to_topic,
        diff_against=diff_against,
        changes=changes,
        checkpoint=checkpoint,
        live_prefix=prefix,
        alerts=alerts,
        jobs=jobs if jobs is not None else default_jobs(),
    )
    try:
        with one_pass():
            refused = _run_replay(req)
    except KafkaConnectionError:
        fail(str(broker_unavailable(bootstrap)), 1)
    except (KafkaError, RuntimeError) as exc:  # RuntimeError: the claims topic does not exist
        fail(str(exc) or type(exc).__name__, 1)
    if refused:
        raise typer.Exit(1)


def _replay_verdicts(
    compiled: CompiledPolicy,
    topic: str,
    since_ms: int | None,
    bootstrap: str | None,
    prefix: str,
    out: str,
) -> None:
    """Re-decide `topic`'s signals under the policy; write the verdicts as JSON lines."""
    config = VerdictConfig.from_policy(compiled.policy)
    try:
        decided = asyncio.run(
            replay_verdicts_topic(bootstrap, topic, config, TopicNames(prefix), since_ms)
        )
    except KafkaConnectionError:
        fail(str(broker_unavailable(bootstrap)), 1)
    except (KafkaError, RuntimeError) as exc:  # RuntimeError: the topic does not exist
        fail(str(exc) or type(exc).__name__, 1)
    lines = b"".join(dumps_line(record) for record in decided)
    if out == "-":
        sys.stdout.buffer.write(lines)
        sys.stdout.buffer.flush()
    else:
        try:
            Path(out).write_bytes(lines)
        except OSError as exc:
            fail(f"{out}: cannot write: {exc.strerror or exc}", 1)


def _run_replay(req: ReplayRequest) -> bool:
    """Replay, write the outputs and the diff; True when input lines were refused."""
    input, checkpoint, to_topic = req.input, req.checkpoint, req.to_topic
    bootstrap, diff_against, changes = req.bootstrap, req.diff_against, req.changes
    sink: IO[bytes]
    if req.out is None:
        sink = sys.stdout.buffer
    else:
        mode = "r+b" if checkpoint is not None and checkpoint.exists() else "wb"
        sink = req.out.open(mode)
    try:
        outputs = Outputs(req, sink)
        if input is not None:
            with no_collection():  # a file's replay makes no reference cycles (collector.py)
                result = replay_file(req, outputs)
        else:
            result = replay_topic_any(req, outputs)
    finally:
        sink.flush()
        if sink is not sys.stdout.buffer:
            sink.close()
    if checkpoint is not None and checkpoint.exists():
        checkpoint.unlink()
    for error in result.errors:
        typer.echo(f"claimwatch: {error}", err=True)
    if to_topic is not None:
        asyncio.run(write_topic(to_topic, outputs.spooled(), bootstrap))
    if outputs.kept is not None and req.alerts is not None:
        with req.alerts.open("wb") as handle:
            for alert in replay_alerts(req.policy, outputs.kept):
                handle.write(dumps_line(alert))
    if outputs.last is not None and diff_against is not None:
        replayed = list(outputs.last.values())
        recorded = recorded_decisions(diff_against, bootstrap, require=DIFF_NEEDS)
        report = diff(recorded, replayed)
        print_diff(report, Console(stderr=True))
        if changes is not None:
            with changes.open("wb") as handle:
                for change in report.changes:
                    handle.write(dumps_line(change))
    return bool(result.errors)


def print_diff(result: Diff, console: Console) -> None:
    """The per-field summary table of a diff."""
    table = Table(title="replay vs recorded (last decision per fact)")
    for column in ("field", "facts", "changed", "transitions"):
        table.add_column(column)
    for name in sorted(result.fields):
        summary = result.fields[name]
        moves = ", ".join(f"{k}: {v}" for k, v in sorted(summary.transitions.items()))
        table.add_row(name, str(summary.compared), str(summary.changed), moves)
    console.print(table)
