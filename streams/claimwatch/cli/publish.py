"""`claimwatch publish`: send JSON-lines claims keyed by fact; report invalid lines, send none."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Annotated, Any

import orjson
import typer

from claimwatch.audit.resolve_file import LineError
from claimwatch.cli.common import fail, open_input
from claimwatch.client.publisher import InvalidClaim, asking, validate
from claimwatch.models.claim import Decide
from claimwatch.policy.signing_keys import client_key, client_kid
from claimwatch.wire import kafka
from claimwatch.wire.codec import MAX_CLAIM_BYTES
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import (
    BrokerUnavailable,
    MissingTopic,
    TopicNames,
    TopicsRefused,
    ensure_topics,
    require_topics,
)

#: How many sends may wait for their acknowledgement before the reader waits for them.
_IN_FLIGHT = 1000


class PublishFailed(RuntimeError):
    """The broker could not be reached or did not acknowledge every claim."""


class DecideMode(StrEnum):
    """The `decide` modes of `--decide` (models.statuses.Decide)."""

    on_arrival = "on_arrival"
    window = "window"


_MODES: dict[DecideMode, Decide] = {
    DecideMode.on_arrival: "on_arrival",
    DecideMode.window: "window",
}


@dataclass(slots=True)
class PublishResult:
    """How many claims were acknowledged, and the lines that were refused."""

    topic: str
    sent: int = 0
    errors: list[LineError] = field(default_factory=list)


def check_line(
    raw: bytes,
    source: str,
    number: int,
    signing_key: bytes | None = None,
    signing_kid: str | None = None,
    decide: Decide | None = None,
) -> tuple[bytes, bytes] | LineError:
    """(key, value) of a valid claim line (signed when given a key), else the error.

    `decide`: the `decide` mode of a claim that names none (see `publisher.asking`).
    """
    if len(raw) > MAX_CLAIM_BYTES:
        reason = f"line of {len(raw)} bytes exceeds the {MAX_CLAIM_BYTES}-byte limit"
        return LineError(source, number, "claim", reason)
    try:
        data: Any = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return LineError(source, number, "claim", f"not JSON: {exc}")
    if not isinstance(data, dict):
        return LineError(source, number, "claim", f"not a JSON object: {type(data).__name__}")
    try:
        return validate(asking(data, decide), signing_key, signing_kid)
    except InvalidClaim as exc:
        key, _, reason = str(exc).partition(": ")
        claim_id = data.get("claim_id")
        if isinstance(claim_id, str) and key != "claim_id":
            reason = f"{reason} (claim_id {claim_id!r})"
        return LineError(source, number, key, reason)


async def _lines(handle: IO[bytes]) -> AsyncIterator[bytes]:
    """The lines of a file; a pipe or terminal is read off the event loop so sends go on."""
    if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        for raw in handle:
            yield raw
        return
    while raw := await asyncio.to_thread(handle.readline):
        yield raw


async def publish_file(
    handle: IO[bytes],
    source: str,
    *,
    bootstrap: str,
    prefix: str,
    partitions: int,
    on_error: Callable[[LineError], None],
    signing_key: bytes | None = None,
    create_topics: bool = False,
    signing_kid: str | None = None,
    decide: Decide | None = None,
) -> PublishResult:
    """Send every valid claim line of `handle`; refused lines go to `on_error` as they are read.

    The claims topic must exist (a worker of `prefix` made it), unless `create_topics`:
    then the deployment's topics are made as the worker makes them, `partitions` each.
    """
    names = TopicNames(prefix)
    result = PublishResult(topic=names.claims)
    producer = kafka.producer(bootstrap, linger_ms=5)
    try:
        if create_topics:
            await ensure_topics(bootstrap, names, partitions)
        else:
            await require_topics(bootstrap, prefix, [names.claims])
        await producer.start()
    except MissingTopic as exc:
        await producer.stop()
        raise PublishFailed(f"{exc}; or pass --create-topics to create them now") from None
    except (TopicsRefused, BrokerUnavailable) as exc:
        await producer.stop()
        raise PublishFailed(str(exc)) from None
    except Exception as exc:
        await producer.stop()
        raise PublishFailed(f"cannot reach Kafka at {bootstrap}: {exc}") from exc
    pending: list[asyncio.Future[Any]] = []
    try:
        number = 0
        async for raw in _lines(handle):
            number += 1
            if not raw.strip():
                continue
            checked = check_line(
                raw.rstrip(b"\r\n"), source, number, signing_key, signing_kid, decide
            )
            if isinstance(checked, LineError):
                result.errors.append(checked)
                on_error(checked)
                continue
            key, value = checked
            pending.append(await producer.send(names.claims, value=value, key=key))
            if len(pending) >= _IN_FLIGHT:
                await _settle(pending, result)
        await _settle(pending, result)
    finally:
        await producer.stop()
    return result


async def _settle(pending: list[asyncio.Future[Any]], result: PublishResult) -> None:
    """Wait for the acknowledgements and count them; raise when a delivery failed."""
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    pending.clear()
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    result.sent += len(outcomes) - len(failures)
    if failures:
        raise PublishFailed(
            f"{len(failures)} claim(s) not acknowledged ({result.sent} were): {failures[0]!r}"
        )


def publish(
    file: Annotated[str, typer.Argument(help="JSON-lines claims; - for stdin")],
    bootstrap: Annotated[str | None, typer.Option(help="Kafka bootstrap host:port")] = None,
    topic_prefix: Annotated[str | None, typer.Option(help="prefix of every topic name")] = None,
    partitions: Annotated[
        int, typer.Option(help="partitions of the topics, with --create-topics")
    ] = 4,
    create_topics: Annotated[
        bool,
        typer.Option(
            help="create the deployment's topics when missing (as the worker does), instead"
            " of refusing: for publishing before the worker first starts"
        ),
    ] = False,
    sign_key_env: Annotated[
        str | None, typer.Option(help="sign every claim (HMAC-SHA256) with the key in this env var")
    ] = None,
    sign_key_file: Annotated[
        str | None, typer.Option(help="sign every claim with the key in this file")
    ] = None,
    sign_kid: Annotated[
        str | None,
        typer.Option(help="the key's id (the policy's `kid`), sent in every claim as `kid`"),
    ] = None,
    decide: Annotated[
        DecideMode | None,
        typer.Option(
            help="when the facts are decided, for every claim without a `decide` key: "
            "on_arrival (at once, the window still merging later claims) or window"
        ),
    ] = None,
) -> None:
    """Send JSON-lines claims to the claims topic keyed by fact; invalid lines are not sent."""
    try:
        signing_key = client_key(sign_key_env, sign_key_file)
        signing_kid = client_kid(sign_kid, signing_key)
    except ValueError as exc:
        fail(str(exc), 2)

    # retries (a just-created topic's leader moving) are not news; failed deliveries are reported
    logging.getLogger("aiokafka").setLevel(logging.ERROR)

    def report(error: object) -> None:
        typer.echo(f"claimwatch: {error}", err=True)

    with open_input(file) as (handle, name):
        try:
            result = asyncio.run(
                publish_file(
                    handle,
                    name,
                    bootstrap=bootstrap or env_bootstrap(),
                    prefix=topic_prefix if topic_prefix is not None else env_prefix(),
                    partitions=partitions,
                    on_error=report,
                    signing_key=signing_key,
                    create_topics=create_topics,
                    signing_kid=signing_kid,
                    decide=_MODES[decide] if decide is not None else None,
                )
            )
        except PublishFailed as exc:
            fail(str(exc), 1)
        except KeyboardInterrupt:
            fail("interrupted", 1)
    invalid = f"; {len(result.errors)} invalid line(s) not sent" if result.errors else ""
    typer.echo(f"sent {result.sent} claim(s) to {result.topic}{invalid}")
    if result.errors:
        raise typer.Exit(1)
