"""A deterministic claim workload: many facts, mixed field types and authority classes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import orjson
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339

BASE_US = parse_rfc3339("2026-09-14T09:00:00Z")
#: The clock at which the offline benchmarks decide: every claim is within a minute of it.
NOW = "2026-09-14T09:01:00Z"
POLICY = Path(__file__).with_name("policy.yaml")

_SOURCES = [
    ("billing-api", None),
    ("billing-api@eu-west-1", None),
    ("ledger-replica", None),
    ("reporting-replica@eu-west-1", None),
    ("reporting-replica@us-east-1", None),
    ("scorer", None),
    ("user", None),
    ("crm", None),
]
_STATUS_VALUES = ["paid", "unpaid", "overdue", "refunded"]


def _value(field: str, rng: random.Random) -> object:
    if field == "payment_status":
        return rng.choice(_STATUS_VALUES[:2])
    if field == "balance":
        cents = rng.choice([0, 1250, 1250, 99_00])
        if rng.random() < 0.5:
            return {"amount": cents, "currency": "USD", "minor_units": True}
        return {"amount": f"{cents / 100:.2f}", "currency": "USD"}
    if field == "risk_score":
        return round(rng.choice([0.42, 0.425, 0.47]), 3)
    if field == "shipping_address":
        return rng.choice(["1 Main  Street", "1 main street", "9 Old Road"])
    grams = rng.choice([250, 250, 300])
    return (
        {"value": grams, "unit": "g"}
        if rng.random() < 0.5
        else {"value": grams / 1000, "unit": "kg"}
    )


def claims(facts: int, per_fact: int, seed: int = 7) -> Iterator[dict[str, object]]:
    """`facts` x `per_fact` claims, interleaved across facts as agents would send them."""
    rng = random.Random(seed)
    fields = ["payment_status", "balance", "risk_score", "shipping_address", "weight"]
    for round_ in range(per_fact):
        for fact in range(facts):
            field = fields[fact % len(fields)]
            source, _ = _SOURCES[rng.randrange(len(_SOURCES))]
            status = "ok" if rng.random() < 0.93 else rng.choice(["not_found", "unavailable"])
            claim: dict[str, object] = {
                "claim_id": f"c-{fact:06d}-{round_:02d}",
                "subject": f"invoice:INV-{fact:06d}",
                "field": field,
                "source": source,
                "observed_at": format_rfc3339(BASE_US + rng.randrange(0, 60_000_000)),
                "status": status,
                "trace_id": f"t-{fact:06d}",
            }
            if status == "ok":
                claim["value"] = _value(field, rng)
            yield claim


def write(path: Path, facts: int, per_fact: int) -> Path:
    """Write the workload as JSON lines (once; reused when present with the same size)."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        for claim in claims(facts, per_fact):
            out.write(orjson.dumps(claim, option=orjson.OPT_APPEND_NEWLINE))
    tmp.rename(path)
    return path
