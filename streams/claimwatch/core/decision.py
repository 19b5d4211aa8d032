"""Decision records: deterministic ids, the action, a short reason, and every claim's fate."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

from claimwatch.core.claim import Claim, fact_key, memo_of
from claimwatch.core.entry import ClaimEntry
from claimwatch.core.limits import clip, fit_for_json
from claimwatch.core.normalize import ABSENT
from claimwatch.core.policy import FieldRule
from claimwatch.core.timeutil import as_rfc3339, format_rfc3339
from claimwatch.models.policy import Authority

#: Envelope keys in the order records show them; other keys follow, sorted.
_ENVELOPE_ORDER: Final = (
    "claim_id",
    "subject",
    "field",
    "source",
    "observed_at",
    "status",
    "value",
    "lineage",
    "confidence",
    "contract_version",
    "agent_id",
    "tool",
    "trace_id",
)
_USUAL: Final = frozenset(_ENVELOPE_ORDER)
#: Each class's text (a plain str: what `.value` gives, without the enum's property lookup).
_AUTHORITY_TEXT: Final = {a: str(a.value) for a in Authority}


def decision_id(policy_version: str, fact: str, pairs: list[tuple[str, str]]) -> str:
    """Hash of the policy version, the fact key and the sorted (claim_id, disposition) pairs.

    The bytes hashed: the version, 0x1F, the fact key, then per pair 0x1E, the claim id,
    0x1F and the disposition (UTF-8), made as one string and encoded once.
    """
    text = "".join([policy_version, "\x1f", fact, *(f"\x1e{c}\x1f{d}" for c, d in sorted(pairs))])
    return "dec_" + hashlib.sha256(text.encode()).hexdigest()[:32]


def action_for(
    outcome: str,
    winner_class: Authority | None,
    rule: FieldRule,
    unregistered: Sequence[str] = (),
) -> str:
    """`proceed` on a resolution not won by a mere assertion; else escalate or degrade.

    Nor is it `proceed` when `unregistered` names the sources that alone carry it (see
    `precedence.unregistered_carriers`).
    """
    if outcome == "resolved" and winner_class is not Authority.ASSERTED and not unregistered:
        return "proceed"
    return "escalate" if rule.consequential else "degrade"


def claim_record(entry: ClaimEntry, keep: bool = False) -> dict[str, Any]:
    """The envelope of a claim as sent, plus authority, lineage and disposition.

    `keep`: the part up to the lineage is kept in the claim's memo and copied for the next
    decision of its fact (made again when the claim's authority or lineage changed); not
    for a rejected claim, whose values are made fit for JSON at each decision.
    """
    if keep and entry.disposition != "rejected":
        memo = memo_of(entry.claim)
        kept = memo.record
        if kept is None or kept[0] is not entry.authority or kept[1] != entry.lineage:
            kept = memo.record = (entry.authority, entry.lineage, _claim_part(entry))
        record = dict(kept[2])
    else:
        record = _claim_part(entry)
    record["disposition"] = entry.disposition
    if entry.disposition == "outranked":
        record["dissent"] = entry.dissent
        record["temporal"] = entry.temporal
    if entry.error is not None:
        record["error"] = entry.error
    if not entry.registered:
        record["unregistered"] = True
    return record


def _claim_part(entry: ClaimEntry) -> dict[str, Any]:
    """A claim's record up to its lineage: the envelope, claimed authority, authority."""
    envelope = entry.claim.envelope
    record: dict[str, Any] = {k: envelope[k] for k in _record_keys(envelope)}
    if entry.disposition == "rejected":  # it may be rejected for a number no encoder takes
        record = {k: fit_for_json(v) for k, v in record.items()}
    if entry.claim.observed_us is not None:
        record["observed_at"] = as_rfc3339(envelope.get("observed_at"), entry.claim.observed_us)
    if "authority" in envelope:
        record["claimed_authority"] = fit_for_json(envelope["authority"])
    record["authority"] = _AUTHORITY_TEXT[entry.authority]
    record["lineage"] = entry.lineage
    return record


#: The record keys of an envelope, per the envelope's keys as sent (producers send a few
#: key sets; past this many the order is worked out at each record instead of kept).
_KEY_ORDERS: dict[tuple[str, ...], tuple[str, ...]] = {}
_MAX_KEY_ORDERS: Final = 1024


def _record_keys(envelope: Mapping[str, Any]) -> tuple[str, ...]:
    """The envelope's keys as a record shows them: the usual ones in order, the rest sorted.

    `authority` is left out: a record shows it apart, as `claimed_authority`.
    """
    sent = tuple(envelope)
    keys = _KEY_ORDERS.get(sent)
    if keys is None:
        usual = [k for k in _ENVELOPE_ORDER if k in envelope]
        rest = sorted(k for k in sent if k not in _USUAL and k != "authority")
        keys = (*usual, *rest)
        if len(_KEY_ORDERS) < _MAX_KEY_ORDERS:
            _KEY_ORDERS[sent] = keys
    return keys


def alternative(entry: ClaimEntry, rule: FieldRule) -> dict[str, Any]:
    """A competing value, as sent and as compared, with its source and time."""
    absent = entry.canon is ABSENT
    return {
        "value": None if absent else entry.claim.value,
        "canonical": rule.normalizer.render(entry.canon),
        "exists": not absent,
        "source": entry.claim.source,
        "claim_id": entry.claim_id,
        "observed_at": format_rfc3339(entry.observed_us),
    }


def claim_order(entry: ClaimEntry) -> tuple[int, str]:
    """Records list claims oldest first, ties by claim_id."""
    return (entry.observed_us, entry.claim_id)


#: Longest text a quarantine record copies from a claim (its ids and names are shown whole
#: up to this; a claim id is at most 128 characters).
_PLAIN_MAX: Final = 256


def quarantine_record(
    policy_version: str,
    subject: str,
    field: str,
    claims: list[Claim],
    reason: str,
    decided_at: str,
    action: str,
    views: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The `rejected` decision of a fact whose deciding failed (`reason`: why).

    Made of plain strings only (ids, names and times as sent, clipped), so that making and
    encoding it cannot fail on the claims that made the ordinary path fail: every claim is
    listed `rejected` with the reason as its error; the id is the usual hash of the policy
    version, the fact key and the (claim_id, disposition) pairs. `views`: the authority and
    lineage of each source, where the policy could tell them (else `derived`, the source).
    """
    listed: dict[str, dict[str, Any]] = {}
    for claim in claims:
        envelope = claim.envelope
        authority, lineage = (views or {}).get(claim.source, ("derived", claim.source))
        listed.setdefault(
            str(claim.claim_id),
            {
                "claim_id": str(claim.claim_id),
                "subject": subject,
                "field": field,
                "source": _plain(claim.source),
                "observed_at": _plain(envelope.get("observed_at")),
                "status": _plain(envelope.get("status")),
                "authority": _plain(authority),
                "lineage": _plain(lineage),
                "disposition": "rejected",
                "error": reason,
            },
        )
    entries = [listed[cid] for cid in sorted(listed)]
    pairs = [(cid, "rejected") for cid in sorted(listed)]
    return {
        "decision_id": decision_id(policy_version, fact_key(subject, field), pairs),
        "subject": subject,
        "field": field,
        "policy_version": policy_version,
        "outcome": "rejected",
        "value": None,
        "canonical": None,
        "exists": None,
        "conflict_kind": None,
        "reason": reason,
        "action": action,
        "corroboration": 0,
        "alternatives": [],
        "decided_at": decided_at,
        "claims": entries,
    }


def _plain(value: object) -> str | None:
    """A value as a short plain string (None stays None; a non-string shows its type)."""
    if value is None:
        return None
    text = value if type(value) is str else f"<{type(value).__name__}>"
    return clip(text, _PLAIN_MAX)
