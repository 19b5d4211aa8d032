"""Recorded decisions, read from a JSON-lines file or a decisions topic (for diff, explain)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from claimwatch.audit.replay import partitions_of, read_range, topic_range
from claimwatch.wire import kafka


def recorded_decisions(
    source: str, bootstrap: str | None, require: tuple[str, ...] = ()
) -> Iterable[dict[str, Any]]:
    """Decisions from a JSON-lines file (read as they are used), or from a topic (repeats kept).

    A record without a key of `require` raises RuntimeError naming it (FILE:LINE).
    """
    path = Path(source)
    if path.exists():
        return _file_decisions(path, require)
    records = asyncio.run(_read_topic(source, bootstrap))
    for number, record in enumerate(records, start=1):
        _check(record, require, f"{source}: record {number}")
    return records


def _file_decisions(path: Path, require: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        yield from iter_decision_lines(handle, str(path), require)


def decision_lines(lines: Iterable[bytes], name: str) -> list[dict[str, Any]]:
    """Decision records of JSON lines; a line that is not one raises RuntimeError(FILE:LINE)."""
    return list(iter_decision_lines(lines, name))


def iter_decision_lines(
    lines: Iterable[bytes], name: str, require: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """`decision_lines`, one record at a time (each holding the keys of `require`)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:  # reported as one line, exit 1
            raise RuntimeError(f"{name}:{number}: not a decision: {exc}") from None
        _check(record, require, f"{name}:{number}")
        yield record


def _check(record: object, require: tuple[str, ...], where: str) -> None:
    """RuntimeError naming `where` unless `record` is an object with every required key."""
    if not isinstance(record, dict):
        raise RuntimeError(f"{where}: not a decision: not a JSON object")
    missing = [key for key in require if not isinstance(record.get(key), str)]
    if missing:
        raise RuntimeError(f"{where}: not a decision: no string `{missing[0]}`")


async def _read_topic(topic: str, bootstrap: str | None) -> list[dict[str, Any]]:
    partitions = await partitions_of(bootstrap, topic)
    consumer = kafka.consumer(bootstrap)
    try:  # stopped even when start fails (no "Unclosed AIOKafkaConsumer" on a dead broker)
        await consumer.start()
        span = await topic_range(consumer, topic, partitions, None, None)
        return [orjson.loads(r.value) async for r in read_range(consumer, span) if r.value]
    finally:
        await consumer.stop()
