"""Serialized size of a live fact's state (what the changelog carries) for five claims."""

from __future__ import annotations

import orjson
from claimwatch.core.claim import claim_from_envelope
from claimwatch.core.processor import PartitionProcessor
from claimwatch.core.state import FactState
from claimwatch.policy.loading import load_policy

from bench.workload import POLICY, claims


def measure(facts: int = 2000) -> dict[str, float]:
    """Mean and max bytes of FactState for `facts` facts with five claims each.

    As the worker keeps them: decided (the open windows closed), with the input offset
    of their decision and the detectors' track.
    """
    store: dict[str, FactState] = {}
    proc = PartitionProcessor(load_policy(POLICY), 0, store, alerts=True)
    for offset, envelope in enumerate(claims(facts, 5, seed=11)):
        proc.position = offset  # the input offset, as the worker records it
        proc.on_claim(claim_from_envelope(envelope))
    proc.flush()
    sizes = [len(orjson.dumps(state.to_obj())) for state in store.values()]
    five = [s for s, st in zip(sizes, store.values(), strict=True) if len(st.claims) == 5]
    return {
        "facts_with_five_claims": len(five),
        "mean_bytes": round(sum(five) / len(five), 1),
        "max_bytes": max(five),
    }
