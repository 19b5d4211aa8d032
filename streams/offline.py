"""Resolve a JSON-lines file of claims without Kafka: one decision per fact, sorted by fact."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from streams.codec import DecodeError, decode_claim
from streams.core.claim import Claim
from streams.core.policy import CompiledPolicy
from streams.core.resolve import resolve
from streams.core.signing import signature_problem


@dataclass(slots=True)
class LineError:
    """A line that was not resolved, with the reason."""

    source: str
    line: int
    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.key}: {self.reason}"


@dataclass(slots=True)
class Batch:
    """Claims grouped by fact, in first-seen order, plus the lines that were refused."""

    facts: dict[tuple[str, str], list[Claim]] = field(default_factory=dict)
    errors: list[LineError] = field(default_factory=list)
    claims: int = 0


def read_claims(
    lines: Iterable[bytes | str], source: str = "<stdin>", policy: CompiledPolicy | None = None
) -> Batch:
    """Decode JSON lines; a malformed line or a reused claim_id with new content is an error.

    With a `policy`, a claim of a source it requires to sign that lacks a valid signature
    is an error too, and its claim_id stays free (as in the worker).
    """
    batch = Batch()
    seen: dict[tuple[str, str, str], Any] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            claim = decode_claim(raw)
        except DecodeError as exc:
            batch.errors.append(LineError(source, number, "claim", str(exc)))
            continue
        unsigned = signature_problem(policy, claim.envelope) if policy is not None else None
        if unsigned is not None:
            batch.errors.append(LineError(source, number, "signature", unsigned))
            continue
        ident = (claim.subject, claim.field, claim.claim_id)
        previous = seen.get(ident)
        if previous is not None:
            if previous != claim.envelope:
                batch.errors.append(
                    LineError(
                        source,
                        number,
                        "claim_id",
                        f"{claim.claim_id!r} was already used for this fact with other content",
                    )
                )
            continue
        seen[ident] = claim.envelope
        batch.claims += 1
        batch.facts.setdefault((claim.subject, claim.field), []).append(claim)
    return batch


def resolve_batch(batch: Batch, policy: CompiledPolicy, now_us: int) -> Iterator[dict[str, Any]]:
    """One decision per fact, all claims of a fact taken as one observation at `now_us`."""
    for key in sorted(batch.facts):
        yield resolve(batch.facts[key], policy, now_us)
