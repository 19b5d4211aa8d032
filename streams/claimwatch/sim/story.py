"""The demo's story: a scripted scenario that shows every kind of decision and alert in minutes.

Played live by `make run` (and `claimwatch simulate --scenario demo --live`) on the demo
policy (`examples/demo-policy.yaml`: the example policy with detector windows sized for a
demo). Scenario seconds from its start:

- 2 s: billing says INV-1 is paid, the reporting replica still says unpaid: resolved
  `paid`, the replica outranked and dissenting.
- 6 s: the two regional ledgers disagree on INV-2's balance: `conflict`, `escalate`.
- 10 s: only the user gives INV-3's shipping address: resolved on an assertion, not verified.
- 15 s: billing marks INV-4..INV-9 paid; the reporting replica keeps serving `unpaid` for
  them, more than the field's 60 s budget behind: the replica-lag alert (stalled), until it
  catches up at 150 s.
- 3-21 s: the regions agree on the balances of INV-30..INV-59 (the field's usual rate).
- 30-36 s: the regions disagree on the balances of INV-10..INV-21 at once: the
  conflict-spike alert on `balance`; at 60 s the EU region agrees again, the conflicts
  leave, and the alert resolves after a quiet window.

Every source repeats its answers every 30 s, as agents keep asking, so facts stay fresh
(a fact whose claims all went stale would turn `insufficient`).
Deterministic: no wall clock, no randomness.

The spike detector counts in tumbling windows laid on the epoch, so where the spike falls
against them matters: split across two windows, each part may be too small to fire, and
the first part, not judged a spike, then raises the baseline the second is judged by.
Offline the story starts on a window edge; the demo (`make run`) starts it when
`aligned_start` says, so the spike's decisions fall in one window there too, with room for
the worker's latency. `simulate --live` starts at once: it does not know the worker's
policy, and its spike may fall across two windows and go unseen.
"""

from __future__ import annotations

from typing import Any, Final

from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339

START_US: Final = parse_rfc3339("2026-09-14T09:00:00Z")
#: How long the story runs (scenario seconds).
DURATION_S: Final = 180
SECOND: Final = 1_000_000
US, EU = "billing-api@us-east-1", "billing-api@eu-west-1"
LAGGING: Final = tuple(f"INV-{n}" for n in range(4, 10))
SPIKED: Final = tuple(f"INV-{n}" for n in range(10, 22))
STEADY: Final = tuple(f"INV-{n}" for n in range(30, 60))
REFRESH_S: Final = 30
LAG_FROM_S, CATCH_UP_S = 15, 150
SPIKE_S, AGREE_S = 30, 60
#: From the first spiked claim to the last one (s).
SPIKE_SPAN_S: Final = 0.5 * (len(SPIKED) - 1) + 0.2
#: How late a live worker may decide the spike and still count it in the spike's window.
LIVE_LATENCY_US: Final = 6 * SECOND


def _usd(cents: int) -> dict[str, Any]:
    return {"amount": cents, "currency": "USD", "minor_units": True}


class _Claims:
    """The story's claims as they are written, numbered in order."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(
        self, at_s: float, subject: str, field: str, source: str, value: Any, **extra: Any
    ) -> None:
        claim: dict[str, Any] = {
            "claim_id": f"demo-{len(self.items) + 1:04d}",
            "subject": f"invoice:{subject}",
            "field": field,
            "source": source,
            "observed_at": format_rfc3339(START_US + int(at_s * SECOND)),
            "status": "ok",
            "value": value,
            "agent_id": "demo-agent",
        }
        claim.update(extra)
        self.items.append(claim)

    def kept(
        self, at_s: float, subject: str, field: str, source: str, value: Any, **extra: Any
    ) -> None:
        """A claim made at `at_s` and again every REFRESH_S until the story ends."""
        while at_s < DURATION_S:
            self.add(at_s, subject, field, source, value, **extra)
            at_s += REFRESH_S


def _outranked_replica(out: _Claims) -> None:
    out.kept(2, "INV-1", "payment_status", "billing-api", "paid")
    out.kept(2.2, "INV-1", "payment_status", "reporting-replica", "unpaid")


def _two_ledgers(out: _Claims) -> None:
    out.kept(6, "INV-2", "balance", US, _usd(125_000), lineage="ledger@us-east-1")
    out.kept(6.3, "INV-2", "balance", EU, _usd(118_000), lineage="ledger@eu-west-1")


def _assertion(out: _Claims) -> None:
    out.add(10, "INV-3", "shipping_address", "user", "12 Rue des Lilas, Lyon")


def _lagging_replica(out: _Claims) -> None:
    for i, invoice in enumerate(LAGGING):
        out.add(1 + 0.1 * i, invoice, "payment_status", "billing-api", "unpaid")
        out.add(1.5 + 0.1 * i, invoice, "payment_status", "reporting-replica", "unpaid")
        out.add(1.6 + 0.1 * i, invoice, "payment_status", "ledger-replica", "unpaid")
    for at in range(LAG_FROM_S, DURATION_S, REFRESH_S):
        for i, invoice in enumerate(LAGGING):
            out.add(at + 0.1 * i, invoice, "payment_status", "billing-api", "paid")
            out.add(at + 0.5 + 0.1 * i, invoice, "payment_status", "ledger-replica", "paid")
    for at in range(LAG_FROM_S + 5, DURATION_S, 20):
        late = at < CATCH_UP_S
        for i, invoice in enumerate(LAGGING):
            value = "unpaid" if late else "paid"
            out.add(at + 0.1 * i, invoice, "payment_status", "reporting-replica", value)


def _steady_balances(out: _Claims) -> None:
    """Balances both regions agree on: the field's usual rate of conflicts is low."""
    for i, invoice in enumerate(STEADY):
        at, cents = 3 + 0.6 * i, _usd(20_000 + 700 * i)
        out.kept(at, invoice, "balance", US, cents, lineage="ledger@us-east-1")
        out.kept(at + 0.2, invoice, "balance", EU, cents, lineage="ledger@eu-west-1")


def _conflict_spike(out: _Claims) -> None:
    """The regions disagree on a dozen balances within seconds, then agree again."""
    for i, invoice in enumerate(SPIKED):
        at, cents = SPIKE_S + 0.5 * i, 50_000 + 500 * i
        out.add(at, invoice, "balance", US, _usd(cents), lineage="ledger@us-east-1")
        out.add(at + 0.2, invoice, "balance", EU, _usd(cents - 1_000), lineage="ledger@eu-west-1")
    for i, invoice in enumerate(SPIKED):
        at, agreed = AGREE_S + 0.5 * i, _usd(50_000 + 500 * i)
        out.kept(at, invoice, "balance", EU, agreed, lineage="ledger@eu-west-1")
        out.kept(at + 0.2, invoice, "balance", US, agreed, lineage="ledger@us-east-1")


def story() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The story's claims in `observed_at` order, and its ground truth."""
    out = _Claims()
    parts = (
        _outranked_replica,
        _two_ledgers,
        _assertion,
        _lagging_replica,
        _steady_balances,
        _conflict_spike,
    )
    for part in parts:
        part(out)
    claims = sorted(out.items, key=lambda c: (parse_rfc3339(c["observed_at"]), c["claim_id"]))

    def at(seconds: float) -> str:
        return format_rfc3339(START_US + int(seconds * SECOND))

    truth = {
        "scenario": "demo",
        "seed": 0,
        "start": at(0),
        "end": at(DURATION_S),
        "policy": "examples/demo-policy.yaml",
        "incidents": [
            {
                "kind": "replica_lag",
                "source": "reporting-replica",
                "field": "payment_status",
                "start": at(LAG_FROM_S),
                "end": at(CATCH_UP_S),
            },
            {
                "kind": "conflict_spike",
                "field": "balance",
                "start": at(SPIKE_S),
                "end": at(AGREE_S),
            },
        ],
        "claims": len(claims),
    }
    return claims, truth


def aligned_start(now_us: int, window_us: int, settle_us: int) -> int:
    """The earliest start at or after `now_us` whose spike is decided within one window.

    The spike's decisions come `settle_us` after its claims, up to LIVE_LATENCY_US later
    still; the start is the first one whose spike begins early enough in a window of
    `window_us` for all of them to fall in it. `now_us` itself when no start fits a window
    that short.
    """
    room = window_us - settle_us - int(SPIKE_SPAN_S * SECOND) - LIVE_LATENCY_US
    if room < 0:
        return now_us
    phase = (now_us + SPIKE_S * SECOND) % window_us
    return now_us if phase <= room else now_us + window_us - phase
