"""`claimwatch decisions`: tail the decisions topic without a group, drop repeated ids, filter."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, Final, TextIO

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaConnectionError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from claimwatch.core.claim import fact_key
from claimwatch.core.timeutil import TimestampError, parse_rfc3339
from claimwatch.wire import kafka
from claimwatch.wire.topics import broker_unavailable

OUTCOMES: Final = ("resolved", "conflict", "insufficient", "rejected")
OUTCOME_STYLES: Final = {
    "resolved": "green",
    "conflict": "bold red",
    "insufficient": "yellow",
    "rejected": "magenta",
}
#: Decision ids remembered for dropping repeats; the oldest are forgotten beyond this.
MAX_REMEMBERED_IDS: Final = 1_000_000


class TopicMissing(RuntimeError):
    """The decisions topic does not exist (no worker has run with this prefix)."""


@dataclass(frozen=True, slots=True)
class Filters:
    """Which decisions to show; None matches everything. Times are inclusive, in µs."""

    field: str | None = None
    outcome: str | None = None
    fact: str | None = None
    since_us: int | None = None
    until_us: int | None = None

    def match(self, record: dict[str, Any]) -> bool:
        if self.field is not None and record.get("field") != self.field:
            return False
        if self.outcome is not None and record.get("outcome") != self.outcome:
            return False
        if (
            self.fact is not None
            and fact_key(str(record.get("subject")), str(record.get("field"))) != self.fact
        ):
            return False
        if self.since_us is None and self.until_us is None:
            return True
        try:
            decided = parse_rfc3339(record.get("decided_at"))
        except TimestampError:
            return False
        if self.since_us is not None and decided < self.since_us:
            return False
        return self.until_us is None or decided <= self.until_us


class DecisionTail:
    """Every partition of a decisions topic (or alerts), read committed, repeated ids dropped.

    `records` and `to_end` give the raw records of any topic (the dead letters' tail).
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        from_beginning: bool = False,
        id_key: str = "decision_id",
        since_ms: int | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.from_beginning = from_beginning
        #: start at the first record of this broker time (ms) or later, when given
        self.since_ms = since_ms
        #: each partition's end when the tail started (what `to_end` reads up to)
        self.ends: dict[TopicPartition, int] = {}
        #: the key of a record's id (repeats of an id are dropped): `alert_id` for alerts
        self.id_key = id_key
        self.repeats = 0
        self.unreadable = 0
        self._seen: dict[str, None] = {}
        self._consumer: AIOKafkaConsumer | None = None

    async def __aenter__(self) -> DecisionTail:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Assign every partition and seek to its beginning, `since_ms`, or its end.

        `BrokerUnavailable` when no broker answers; `TopicMissing` when the topic is absent.
        """
        try:
            found = await kafka.topic_partitions(self.bootstrap, self.topic)
        except KafkaConnectionError:
            raise broker_unavailable(self.bootstrap) from None
        partitions = [TopicPartition(self.topic, p) for p in found]
        if not partitions:
            raise TopicMissing(f"topic {self.topic} does not exist (has a worker run with it?)")
        consumer = kafka.consumer(self.bootstrap)
        await consumer.start()
        self._consumer = consumer
        consumer.assign(partitions)
        self.ends = await consumer.end_offsets(partitions)
        if self.since_ms is not None:
            found = await consumer.offsets_for_times({tp: self.since_ms for tp in partitions})
            offsets = {tp: self.ends[tp] if at is None else at.offset for tp, at in found.items()}
        elif self.from_beginning:
            offsets = await consumer.beginning_offsets(partitions)
        else:
            offsets = self.ends
        for tp, offset in offsets.items():
            consumer.seek(tp, offset)

    async def stop(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await consumer.stop()

    async def batches(
        self, *, follow: bool, idle_timeout_s: float
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """New decisions as they arrive; without `follow`, until `idle_timeout_s` of silence."""
        async for messages in self.records(follow=follow, idle_timeout_s=idle_timeout_s):
            fresh = self._fresh(m.value for m in messages)
            if fresh:
                yield fresh

    async def records(
        self, *, follow: bool, idle_timeout_s: float
    ) -> AsyncIterator[list[ConsumerRecord[bytes, bytes]]]:
        """The raw records as they arrive; without `follow`, until `idle_timeout_s` of silence."""
        consumer = await self._started()
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            wait = 1.0 if follow else max(0.0, min(1.0, last + idle_timeout_s - loop.time()))
            fetched = await consumer.getmany(timeout_ms=int(wait * 1000))
            messages = [m for batch in fetched.values() for m in batch]
            if messages:
                last = loop.time()
                yield messages
            elif not follow and loop.time() - last >= idle_timeout_s:
                return

    async def to_end(self) -> AsyncIterator[list[ConsumerRecord[bytes, bytes]]]:
        """The raw records up to each partition's end as it was when the tail started."""
        consumer = await self._started()
        left = {tp for tp, end in self.ends.items() if await consumer.position(tp) < end}
        while left:
            fetched = await consumer.getmany(*left, timeout_ms=1000)
            ends = self.ends
            messages = [m for tp, batch in fetched.items() for m in batch if m.offset < ends[tp]]
            if messages:
                yield messages
            # an end past the last record (a transaction marker) is reached by the position
            left = {tp for tp in left if await consumer.position(tp) < self.ends[tp]}

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            await self.start()
        assert self._consumer is not None
        return self._consumer

    def _fresh(self, values: Iterable[bytes | None]) -> list[dict[str, Any]]:
        fresh = []
        for raw in values:
            try:
                record = orjson.loads(raw or b"")
                ident = record[self.id_key]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                self.unreadable += 1
                continue
            if ident in self._seen:
                self.repeats += 1
                continue
            self._seen[ident] = None
            if len(self._seen) > MAX_REMEMBERED_IDS:
                del self._seen[next(iter(self._seen))]
            fresh.append(record)
        return fresh


def display_value(value: Any) -> str:
    """A decision's value for people: strings bare, money as `12.50 USD`, the rest as JSON."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and {"amount", "currency"} <= value.keys():
        amount, currency = value["amount"], value["currency"]
        if value.get("minor_units") and isinstance(amount, int) and isinstance(currency, str):
            from babel.numbers import get_currency_precision

            digits = get_currency_precision(currency)
            return f"{amount / 10**digits:.{digits}f} {currency}"
        return f"{amount} {currency}"
    if isinstance(value, dict) and {"value", "unit"} <= value.keys():
        return f"{value['value']} {value['unit']}"
    return orjson.dumps(value).decode()


def _cells(record: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    return (
        str(record.get("decided_at", "")),
        fact_key(str(record.get("subject")), str(record.get("field"))),
        str(record.get("outcome", "")),
        display_value(record.get("value")),
        str(record.get("action", "")),
        str(record.get("reason", "")),
    )


class Printer:
    """Writes decisions as JSON lines, tab-separated lines, or a table on a terminal."""

    def __init__(self, mode: str, out: TextIO | None = None) -> None:
        self.mode = mode
        self.out = out or sys.stdout
        self.console = Console(file=self.out, highlight=False)
        self.count = 0

    def emit(self, records: list[dict[str, Any]]) -> None:
        if self.mode == "json":
            self.out.writelines(orjson.dumps(r).decode() + "\n" for r in records)
        elif self.mode == "plain":
            self.out.writelines("\t".join(_cells(r)) + "\n" for r in records)
        else:
            self.console.print(self._table(records))
        self.out.flush()
        self.count += len(records)

    def _table(self, records: list[dict[str, Any]]) -> Table:
        # fixed widths, so that the tables printed batch after batch line up as one
        table = Table(show_header=self.count == 0, box=None, expand=True, pad_edge=False)
        table.add_column("decided_at", width=24, no_wrap=True, style="dim")
        table.add_column("fact", width=30, overflow="fold")
        table.add_column("outcome", width=12, no_wrap=True)
        table.add_column("value", width=14, overflow="fold")
        table.add_column("action", width=8, no_wrap=True)
        table.add_column("reason", ratio=1, overflow="fold")
        for record in records:
            cells = [Text(cell) for cell in _cells(record)]
            cells[2].stylize(OUTCOME_STYLES.get(cells[2].plain, ""))
            table.add_row(*cells)
        return table


async def run_decisions(
    *,
    bootstrap: str,
    topic: str,
    filters: Filters,
    from_beginning: bool,
    follow: bool,
    idle_timeout_s: float,
    printer: Printer,
) -> DecisionTail:
    """Print the matching decisions until idle (or forever with `follow`)."""
    async with DecisionTail(bootstrap, topic, from_beginning=from_beginning) as tail:
        async for batch in tail.batches(follow=follow, idle_timeout_s=idle_timeout_s):
            shown = [r for r in batch if filters.match(r)]
            if shown:
                printer.emit(shown)
    return tail
