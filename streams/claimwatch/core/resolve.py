"""Resolution of one fact: contract, evidence, freshness, lineage, precedence.

The rules: docs/concepts.md#decide.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claimwatch.core.claim import Claim
from claimwatch.core.contract import check
from claimwatch.core.decision import (
    action_for,
    alternative,
    claim_order,
    claim_record,
    decision_id,
)
from claimwatch.core.entry import ClaimEntry, by_recency
from claimwatch.core.freshness import is_stale
from claimwatch.core.lineage import collapse
from claimwatch.core.normalize import ABSENT
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.precedence import Precedence, decide, unregistered_carriers
from claimwatch.core.reason import reason_for
from claimwatch.core.timeutil import format_rfc3339


def dedupe(claims: Iterable[Claim]) -> list[Claim]:
    """Keep the first claim of every claim_id: a repeated id counts once."""
    seen: dict[str, Claim] = {}
    for claim in claims:
        seen.setdefault(claim.claim_id, claim)
    return list(seen.values())


def resolve(claims: Iterable[Claim], policy: CompiledPolicy, now_us: int) -> dict[str, Any]:
    """Decide one fact from its claims at clock time `now_us`; returns the decision record."""
    record, _entries = resolve_entries(claims, policy, now_us)
    return record


def resolve_entries(
    claims: Iterable[Claim],
    policy: CompiledPolicy,
    now_us: int,
    memo: bool = False,
    distinct: bool = False,
) -> tuple[dict[str, Any], list[ClaimEntry]]:
    """`resolve`, with the entries the record was made of, in the order of its `claims`.

    `memo`: the claims' contract checks keep what they can in each claim's memo (see
    `contract.check`), for a caller that decides the same live claims again and again.
    `distinct`: the claims' ids are known to differ (a fact state's live claims), so no
    repeat is looked for.
    """
    unique = list(claims) if distinct else dedupe(claims)
    if not unique:
        raise ValueError("resolve needs at least one claim")
    first = unique[0]
    rule = policy.rule(first.field)
    entries = []
    rejected = 0
    for claim in unique:
        view = policy.source_view(claim.field, claim.source)
        lineage = claim.lineage_label or view.lineage
        entry = ClaimEntry(claim, view.authority, view.rank, lineage, view.registered)
        checked = check(claim, rule, now_us, memo)
        if checked.error is not None:
            entry.disposition, entry.error = "rejected", checked.error
            rejected += 1
        elif not checked.evidence:
            entry.disposition = "no_evidence"
        elif claim.superseded is not None:  # out of the running before any decision
            entry.disposition = "stale"
        else:
            entry.canon = checked.canon
        entries.append(entry)

    evidence = [e for e in entries if e.disposition is None]
    fresh = []
    for entry in evidence:
        if is_stale(entry.observed_us, now_us, rule.freshness_us):
            entry.disposition = "stale"
        else:
            fresh.append(entry)

    verdict: Precedence | None = None
    if rejected == len(entries):
        outcome = "rejected"
    elif not fresh:
        outcome = "insufficient"
    else:
        verdict = decide(collapse(fresh, rule.normalizer), rule)
        outcome = verdict.outcome
    return _record(first, entries, verdict, outcome, policy, now_us, memo), entries


def _record(
    first: Claim,
    entries: list[ClaimEntry],
    verdict: Precedence | None,
    outcome: str,
    policy: CompiledPolicy,
    now_us: int,
    memo: bool,
) -> dict[str, Any]:
    rule = policy.rule(first.field)
    winner = verdict.winner if verdict is not None else None
    if winner is not None:
        for entry in entries:
            if entry.disposition == "outranked":
                entry.temporal = entry.observed_us < winner.observed_us
    fact = first.fact_key
    entries.sort(key=claim_order)
    pairs = [(e.claim_id, e.disposition or "") for e in entries]
    exists = None if winner is None else winner.canon is not ABSENT
    claims = [claim_record(e, memo) for e in entries]
    carriers = unregistered_carriers(claims) if outcome == "resolved" else []
    record: dict[str, Any] = {
        "decision_id": decision_id(policy.version, fact, pairs),
        "subject": first.subject,
        "field": first.field,
        "policy_version": policy.version,
        "outcome": outcome,
        "value": winner.claim.value if winner is not None and exists else None,
        "canonical": rule.normalizer.render(winner.canon) if winner is not None else None,
        "exists": exists,
        "conflict_kind": verdict.conflict_kind if verdict is not None else None,
        "reason": "",
        "action": action_for(outcome, winner.authority if winner else None, rule, carriers),
        "corroboration": (
            sum(1 for e in entries if e.disposition in ("won", "corroborating")) if winner else 0
        ),
        "alternatives": (
            [alternative(e, rule) for e in by_recency(verdict.strongest)]
            if verdict is not None and verdict.show_alternatives
            else []
        ),
        "decided_at": format_rfc3339(now_us),
        "claims": claims,
    }
    settled = verdict.settled_by.value if verdict and verdict.settled_by else None
    record["reason"] = reason_for(record, rule.freshness_us, settled)
    return record
