"""The dead letters of a set-aside fact: each of its claims, with the fact's key and reason."""

from __future__ import annotations

from claimwatch.core.claim import Claim
from claimwatch.core.limits import fit_for_json
from claimwatch.core.step import Quarantined
from claimwatch.wire.codec import dumps
from claimwatch.wire.topic_names import TopicNames
from claimwatch.worker.dead_letters import dead_letter
from claimwatch.worker.outgoing import Outgoing


def set_aside_letters(
    names: TopicNames,
    aside: Quarantined,
    partition: int,
    offset: int,
    current: tuple[Claim, bytes] | None,
) -> list[Outgoing]:
    """One DLQ record per claim of a quarantined fact, at its input partition and offset.

    Each carries the fact's key and the reason; its value is the claim's bytes as sent
    when it is the claim being handled (`current`), else its envelope as stored.
    """
    origin = (names.claims, partition, offset)
    key = aside.key.encode()
    sends = []
    for claim in aside.claims:
        raw = current[1] if current is not None and claim is current[0] else _envelope_bytes(claim)
        sends.append(dead_letter(names, origin, key, raw, aside.reason))
    return sends


def _envelope_bytes(claim: Claim) -> bytes:
    """A stored claim's envelope as JSON, for its DLQ copy (its id alone if nothing encodes)."""
    try:
        return dumps(fit_for_json(claim.envelope))
    except Exception:
        return dumps({"claim_id": str(claim.claim_id), "error": "envelope does not encode"})
