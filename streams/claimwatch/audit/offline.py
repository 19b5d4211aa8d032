"""The offline API: decide claims, or replay a claims stream, under a policy, in process.

No Kafka and no worker: what `claimwatch resolve` and `claimwatch replay` do for files,
for claims a program holds (dicts, `ClaimEnvelope`s or JSON lines).

    policy = claimwatch.load_policy("examples/policy.yaml")
    resolved = claimwatch.resolve(claims, policy, now="2026-09-14T09:12:30Z")
    for decision in resolved.decisions:
        print(claimwatch.explain(decision))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claimwatch.audit.replay import Replayed, Replayer
from claimwatch.audit.resolve_file import LineError, read_claims, resolve_batch
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.models.claim import ClaimEnvelope
from claimwatch.policy.loading import load_policy
from claimwatch.wire.codec import dumps

#: A claim as a program may hold it.
ClaimLike = Mapping[str, Any] | ClaimEnvelope | str | bytes


@dataclass(slots=True)
class Resolved:
    """One decision per fact (sorted by fact), and the claims that could not be read."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def resolve(
    claims: Iterable[ClaimLike],
    policy: CompiledPolicy | str | Path,
    now: str | datetime | None = None,
) -> Resolved:
    """Decide every fact of `claims` at `now`, as `claimwatch resolve` does.

    `now` is RFC 3339 text or an aware datetime (None: the clock); all of a fact's claims
    are taken as one observation at it. A claim that cannot be read is an error of its own
    (its position, from 1, as the line); the others are decided as usual.
    """
    compiled = _policy(policy)
    batch = read_claims((_line(c) for c in claims), "<claims>", compiled)
    decisions = list(resolve_batch(batch, compiled, _now_us(now)))
    return Resolved(decisions, batch.errors)


def replay(
    claims: Iterable[ClaimLike], policy: CompiledPolicy | str | Path, partitions: int = 4
) -> Replayed:
    """The decisions a worker with `policy` makes of `claims` in this order.

    As `claimwatch replay` makes them: settle windows, freshness and pruning run on the
    claims' own clock.
    """
    replayer = Replayer(_policy(policy), partitions)
    for number, claim in enumerate(claims, start=1):
        replayer.feed_line(_line(claim), "<claims>", number)
    return replayer.finish()


def _policy(policy: CompiledPolicy | str | Path) -> CompiledPolicy:
    return policy if isinstance(policy, CompiledPolicy) else load_policy(policy)


def _line(claim: ClaimLike) -> bytes:
    if isinstance(claim, bytes):
        return claim
    if isinstance(claim, str):
        return claim.encode()
    if isinstance(claim, ClaimEnvelope):
        return claim.model_dump_json(exclude_none=True).encode()
    return dumps(dict(claim))


def _now_us(now: str | datetime | None) -> int:
    if now is None:
        now = datetime.now(UTC)
    if isinstance(now, datetime):
        if now.tzinfo is None:
            raise ValueError("now: a datetime with a time zone is needed (e.g. tzinfo=UTC)")
        now = now.isoformat()
    return parse_rfc3339(now)
