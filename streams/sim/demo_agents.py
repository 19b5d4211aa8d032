"""Simulated agents of the live demo: a billing API, a lagging replica, a cache and a user."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from streams.client.publisher import Publisher

#: Where an invoice's payment status may go next; None closes it (a new invoice opens).
NEXT_STATUS: Final[dict[str, tuple[str | None, ...]]] = {
    "unpaid": ("paid", "paid", "overdue"),
    "overdue": ("paid",),
    "paid": ("refunded", None, None),
    "refunded": (None,),
}
LATE_FEE: Final = 15_00
CACHE_LAG_S: Final = 1.5  # the ledger cache serves the previous balance this long
FAILOVER_LAG_S: Final = 10.0  # the failover region's own ledger trails by this much


@dataclass(slots=True)
class Invoice:
    """The truth the system of record holds, and what it was before its last change."""

    number: str
    status: str
    balance: int  # minor units (cents)
    was: tuple[str, int] | None = None
    changed: float = 0.0  # loop time of the last change
    replica_lag: float = 0.0  # how long the reporting replica serves `was` after it

    @property
    def subject(self) -> str:
        return f"invoice:{self.number}"

    def view(self, lag: float, now: float) -> tuple[str, int]:
        """(status, balance) as a source lagging `lag` seconds behind sees it."""
        if self.was is not None and now - self.changed < lag:
            return self.was
        return self.status, self.balance


class Simulation:
    """Invoices that change now and then, and an agent asking its tools about each of them."""

    def __init__(
        self,
        publisher: Publisher,
        run_id: str,
        say: Callable[[str], None],
        *,
        invoices: int = 5,
        seed: int | None = None,
    ) -> None:
        self.publisher = publisher
        self.run_id = run_id
        self.say = say
        self.rng = random.Random(seed)
        self.count = invoices
        self.invoices: dict[str, Invoice] = {}
        self.sent = 0
        self._numbers = itertools.count(101)
        self._claim_ids = itertools.count(1)
        self._traces = itertools.count(1)
        self._group: asyncio.TaskGroup | None = None

    async def run(self) -> None:
        """Run until cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            for _ in range(self.count):
                self._open()
            group.create_task(self._changes())

    def _open(self) -> Invoice:
        number = f"INV-{next(self._numbers)}"
        invoice = Invoice(number, "unpaid", self.rng.randrange(40_00, 900_00, 5))
        self.invoices[number] = invoice
        assert self._group is not None
        self._group.create_task(self._ask(invoice))
        return invoice

    async def _ask(self, invoice: Invoice) -> None:
        await asyncio.sleep(self.rng.uniform(0.0, 2.0))
        while invoice.number in self.invoices:
            await self._round(invoice)
            await asyncio.sleep(self.rng.uniform(3.0, 7.0))

    async def _changes(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.rng.uniform(5.0, 12.0))
            invoice = self.rng.choice(list(self.invoices.values()))
            status = self.rng.choice(NEXT_STATUS[invoice.status])
            if status is None:
                del self.invoices[invoice.number]
                opened = self._open()
                self.say(f"{invoice.subject} closed; {opened.subject} opened")
                continue
            invoice.was = (invoice.status, invoice.balance)
            invoice.status = status
            if status == "overdue":
                invoice.balance += LATE_FEE
            elif status in ("paid", "refunded"):
                invoice.balance = 0
            invoice.changed = loop.time()
            lagging = self.rng.random() < 0.5
            invoice.replica_lag = self.rng.uniform(6.0, 20.0) if lagging else 0.0
            note = f"; the reporting replica lags {invoice.replica_lag:.0f}s" if lagging else ""
            self.say(
                f"{invoice.subject} {invoice.was[0]} → {status}, "
                f"balance {invoice.balance / 100:.2f} USD{note}"
            )

    async def _round(self, invoice: Invoice) -> None:
        """The agent asks every tool about the invoice at once; they answer a moment apart."""
        rng = self.rng
        now = asyncio.get_running_loop().time()
        trace = f"{self.run_id}-t{next(self._traces)}"
        status, balance = invoice.status, invoice.balance
        if rng.random() < 0.05:  # the billing API has a bad moment
            for field in ("payment_status", "balance"):
                await self._send(invoice, field, "billing-api", trace, "get_invoice", None)
        else:
            await self._send(invoice, "payment_status", "billing-api", trace, "get_invoice", status)
            await self._send(
                invoice, "balance", "billing-api", trace, "get_invoice", _money(balance)
            )
        await asyncio.sleep(rng.uniform(0.05, 0.3))
        replica, _ = invoice.view(invoice.replica_lag, now)
        source = "reporting-replica@eu-west-1"
        await self._send(invoice, "payment_status", source, trace, "report_invoice", replica)
        _, cached = invoice.view(CACHE_LAG_S, now)
        cash = {"amount": f"{cached / 100:.2f}", "currency": "USD"}
        await self._send(invoice, "balance", "ledger-replica", trace, "ledger_cache", cash)
        if rng.random() < 0.25:  # "I paid that already"
            await self._send(invoice, "payment_status", "user", trace, "chat", "paid")
        if rng.random() < 0.05:  # a failover region with its own, trailing ledger answers too
            old_status, old_balance = invoice.view(FAILOVER_LAG_S, now)
            region, tool = "billing-api@us-east-1", "get_invoice"
            await self._send(
                invoice, "payment_status", region, trace, tool, old_status, lineage="ledger-us"
            )
            await self._send(
                invoice, "balance", region, trace, tool, _money(old_balance), lineage="ledger-us"
            )

    async def _send(
        self,
        invoice: Invoice,
        field: str,
        source: str,
        trace: str,
        tool: str,
        value: Any,
        **extra: Any,
    ) -> None:
        """One claim; a value of None means the tool failed (`unavailable`)."""
        observed = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        claim: dict[str, Any] = {
            "claim_id": f"{self.run_id}-{next(self._claim_ids)}",
            "subject": invoice.subject,
            "field": field,
            "source": source,
            "observed_at": observed,
            "status": "ok" if value is not None else "unavailable",
            "agent_id": "support-bot",
            "tool": tool,
            "trace_id": trace,
            **extra,
        }
        if value is not None:
            claim["value"] = value
        await self.publisher.publish(claim)
        self.sent += 1


def _money(minor: int) -> dict[str, Any]:
    return {"amount": minor, "currency": "USD", "minor_units": True}
