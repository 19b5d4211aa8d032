"""The dead-letter topic read back: each record's origin and reason, and a client's own claims.

A worker sends to `<prefix>claims.dlq` every record it will not use as it is: the original
key and bytes, with the headers `claimwatch.reason`, `claimwatch.topic`,
`claimwatch.partition`, `claimwatch.offset` (and `claimwatch.truncated`,
`claimwatch.original_size`, `claimwatch.original_sha256` on a copy cut to the producer's
limit). A record without those headers (written by something else) is read all the same:
its fields are None and `DeadLetter.line` says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiokafka import ConsumerRecord

from claimwatch.client.decisions import DecisionTail

#: Characters of a record's value shown by `DeadLetter.line` and `DeadLetter.summary`.
VALUE_HEAD: Final = 120
#: Seconds a client gives the dead-letter topic after a wait timed out, at most.
LOOKUP_S: Final = 5.0
#: How far before its own publishing a client looks in the dead-letter topic (ms): the
#: broker's clock stamps the records, and it may run behind the client's.
CLOCK_SLACK_MS: Final = 60_000


def _header(headers: Mapping[str, bytes], name: str) -> str | None:
    raw = headers.get(f"claimwatch.{name}")
    return raw.decode("utf-8", "replace") if raw is not None else None


def _number(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record of the dead-letter topic: where it is, where it came from, and why."""

    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes
    #: the worker's reason; None on a record without claimwatch headers
    reason: str | None
    origin_topic: str | None
    origin_partition: int | None
    origin_offset: int | None
    truncated: bool

    @classmethod
    def of(cls, record: ConsumerRecord[bytes, bytes]) -> DeadLetter:
        """Read a consumed record; headers that are absent or malformed become None."""
        headers = {name: value for name, value in record.headers or () if value is not None}
        return cls(
            partition=record.partition,
            offset=record.offset,
            timestamp_ms=record.timestamp,
            key=record.key,
            value=record.value or b"",
            reason=_header(headers, "reason"),
            origin_topic=_header(headers, "topic"),
            origin_partition=_number(_header(headers, "partition")),
            origin_offset=_number(_header(headers, "offset")),
            truncated=_header(headers, "truncated") == "true",
        )

    def claim_id(self) -> str | None:
        """The `claim_id` of the value when it is a JSON object holding one."""
        try:
            data = orjson.loads(self.value)
        except orjson.JSONDecodeError:
            return None
        claim_id = data.get("claim_id") if isinstance(data, dict) else None
        return claim_id if isinstance(claim_id, str) else None

    def origin(self) -> str:
        """`topic[partition]@offset` of the record it copies, or why that is unknown."""
        if self.origin_topic is None:
            return "(origin unknown)"
        return f"{self.origin_topic}[{self.origin_partition}]@{self.origin_offset}"

    def summary(self) -> dict[str, Any]:
        """The record as a JSON-ready object (key and value decoded, the value cut short)."""
        return {
            "dlq_partition": self.partition,
            "dlq_offset": self.offset,
            "timestamp_ms": self.timestamp_ms,
            "topic": self.origin_topic,
            "partition": self.origin_partition,
            "offset": self.origin_offset,
            "key": None if self.key is None else self.key.decode("utf-8", "replace"),
            "reason": self.reason,
            "truncated": self.truncated,
            "value_bytes": len(self.value),
            "value_head": self.value[:VALUE_HEAD].decode("utf-8", "replace"),
        }

    def line(self) -> str:
        """One line for people: origin, key, reason, the start of the value."""
        key = "-" if self.key is None else self.key.decode("utf-8", "replace")
        reason = (
            self.reason
            if self.reason is not None
            else "(no claimwatch.reason header: not written by a claimwatch worker)"
        )
        head = self.value[:VALUE_HEAD].decode("utf-8", "replace")
        more = "..." if len(self.value) > VALUE_HEAD or self.truncated else ""
        return f"{self.origin()}\t{key}\t{reason}\t{head}{more}"


async def dead_lettered(
    bootstrap: str, topic: str, since_ms: int, wanted: Mapping[str, set[str]]
) -> dict[str, str]:
    """The claims of `wanted` (fact key -> claim ids) dead-lettered since `since_ms`: id -> reason.

    Reads the dead-letter topic from that broker time up to its current end, once. The last
    reason of a claim dead-lettered more than once is kept.
    """
    found: dict[str, str] = {}
    async with DecisionTail(bootstrap, topic, since_ms=since_ms) as tail:
        async for batch in tail.to_end():
            for letter in map(DeadLetter.of, batch):
                key = (letter.key or b"").decode("utf-8", "replace")
                claim_id = letter.claim_id() if key in wanted else None
                if claim_id is not None and claim_id in wanted[key]:
                    found[claim_id] = letter.reason or "(no reason given)"
    return found


async def lookup(
    bootstrap: str, topic: str, since_ms: int, wanted: Mapping[str, set[str]]
) -> tuple[dict[str, str], str | None]:
    """`dead_lettered` within `LOOKUP_S`; never raises: ({}, why not) when it cannot be read."""
    try:
        found = await asyncio.wait_for(
            dead_lettered(bootstrap, topic, since_ms - CLOCK_SLACK_MS, wanted), LOOKUP_S
        )
    except Exception as exc:  # a timed-out wait is reported as it is; the lookup is a hint
        return {}, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return found, None
