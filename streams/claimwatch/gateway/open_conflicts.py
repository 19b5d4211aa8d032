"""The conflicts open now on a field, read from the worker's conflicts topic.

The worker writes `<prefix>conflicts` a record each time a fact enters conflict
(`event: entered`, with the competing values) or leaves it (`left`), keyed by fact. A fact
is in conflict now when its latest record there says `entered`. The topic is read from
its beginning up to its end as it was when asked (no consumer group, nothing committed),
keeping each fact's latest record: the cost grows with the topic's length, which is
bounded by its retention (the broker's default for that topic), not by how many facts
there are. Limits, said in every answer: a fact that entered conflict longer ago than the
retention and never left drops out of the answer; the read stops after `MAX_RECORDS`
records or `READ_S` seconds, and the answer then says it is incomplete.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any, Final

import orjson

from claimwatch.client.decisions import DecisionTail
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import TopicNames

#: Records read at most for one answer.
MAX_RECORDS: Final = 200_000
#: Seconds one answer may take to read the topic, at most.
READ_S: Final = 5.0


@dataclass(slots=True)
class OpenConflicts:
    """The facts of a field whose latest conflicts record says `entered`, and how sure that is."""

    field: str
    #: per subject: that `entered` record (decision id, time, kind, competing values)
    open: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    records_read: int = 0
    #: False when the read stopped before the topic's end (records or time limit)
    complete: bool = True

    def add(self, record: Any) -> None:
        """Take one record of the topic (in order within its partition)."""
        self.records_read += 1
        if not isinstance(record, dict) or record.get("field") != self.field:
            return
        subject = str(record.get("subject"))
        if record.get("event") == "entered":
            self.open[subject] = record
        elif record.get("event") == "left":
            self.open.pop(subject, None)


async def open_conflicts(
    bootstrap: str | None, prefix: str | None, field_name: str, *, read_s: float = READ_S
) -> OpenConflicts:
    """The conflicts open on `field_name` now; `BrokerUnavailable`, `TopicMissing` as raised.

    A fact's records all sit in its one partition, in order, so reading each partition
    in order is enough to know each fact's latest record.
    """
    names = TopicNames(prefix if prefix is not None else env_prefix())
    found = OpenConflicts(field_name)
    tail = DecisionTail(bootstrap or env_bootstrap(), names.conflicts, from_beginning=True)
    async with tail:
        try:
            async with asyncio.timeout(read_s):
                async for batch in tail.to_end():
                    for message in batch:
                        found.add(_json(message.value))
                    if found.records_read >= MAX_RECORDS:
                        found.complete = False
                        break
        except TimeoutError:
            found.complete = False
    return found


def _json(raw: bytes | None) -> Any:
    try:
        return orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return None
