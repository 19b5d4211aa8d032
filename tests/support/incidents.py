"""Incidents driven live on a broker: a reporting replica lagging behind its field's owner."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tests.support.claims import envelope
from tests.support.kafka import publish_claims, rfc3339

#: A policy `lagging_replica` pages under: billing-api owns payment_status (2 s freshness).
LAG_POLICY = """\
policy_version: lag-test
defaults: {freshness: 5m, settle: 0s}
sources:
  billing-api:       {authority: system_of_record, lineage: ledger}
  reporting-replica: {authority: derived, lineage: reporting}
fields:
  payment_status: {type: enum, values: [paid, unpaid], freshness: 2s, owner: billing-api}
alerts:
  replica_lag: {evaluation: 20s, min_samples: 3}
"""

#: Facts invoice:L-0 .. invoice:L-7 of `payment_status`.
LAG_FACTS = 8


async def lag_phase(bootstrap: str, prefix: str, parts: list[tuple[str, str]], n: int) -> None:
    """Every fact invoice:L-i gets the given (source, value) claims, observed now."""
    now = datetime.now(UTC)
    claims = [
        envelope(
            f"{source}-{i}-{n}",
            source,
            value,
            subject=f"invoice:L-{i}",
            observed_at=rfc3339(now + timedelta(milliseconds=10 * i)),
        )
        for i in range(LAG_FACTS)
        for source, value in parts
    ]
    await publish_claims(bootstrap, prefix, claims)


async def lagging_replica(bootstrap: str, prefix: str) -> None:
    """`billing-api` changes unpaid to paid; `reporting-replica` serves unpaid 6 s longer.

    For a policy where billing-api owns `payment_status` with a 2 s freshness.
    """
    await lag_phase(
        bootstrap, prefix, [("billing-api", "unpaid"), ("reporting-replica", "unpaid")], 0
    )
    await asyncio.sleep(1)
    await lag_phase(
        bootstrap, prefix, [("billing-api", "paid"), ("reporting-replica", "unpaid")], 1
    )
    await asyncio.sleep(3)
    await lag_phase(bootstrap, prefix, [("reporting-replica", "unpaid")], 2)
    await asyncio.sleep(3)
    await lag_phase(bootstrap, prefix, [("reporting-replica", "paid")], 3)
