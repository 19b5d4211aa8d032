"""Resolve a JSON-lines file of claims without Kafka: one decision per fact, sorted by fact."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from claimwatch.core.claim import Claim
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.quarantine import internal_error, set_aside
from claimwatch.core.resolve import resolve
from claimwatch.core.signing import signature_problem
from claimwatch.wire.codec import DecodeError, decode_claim, dumps_line


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

    #: each fact's kept claims by claim_id, in first-seen order, with the line of each
    facts: dict[tuple[str, str], dict[str, tuple[Claim, int]]] = field(default_factory=dict)
    errors: list[LineError] = field(default_factory=list)
    claims: int = 0
    #: what was read from: the source errors name
    source: str = "<stdin>"

    def claims_of(self, key: tuple[str, str]) -> list[Claim]:
        """The kept claims of a fact, in first-seen order."""
        return [claim for claim, _line in self.facts[key].values()]


def read_claims(
    lines: Iterable[bytes | str | Claim],
    source: str = "<stdin>",
    policy: CompiledPolicy | None = None,
) -> Batch:
    """Decode JSON lines; a malformed line or a reused claim_id with new content is an error.

    A line may come as its claim already decoded (a caller that parsed it for its own
    reasons, as `resolve_parallel` does through `read_numbered`); it is then taken as is.

    With a `policy`, a claim of a source it requires to sign that lacks a valid signature
    is an error too, and its claim_id stays free (as in the worker). Whatever goes wrong
    with one line is that line's error: the other lines are read as usual.
    """
    return read_numbered(enumerate(lines, start=1), source, policy)


def read_numbered(
    numbered: Iterable[tuple[int, bytes | str | Claim]],
    source: str = "<stdin>",
    policy: CompiledPolicy | None = None,
) -> Batch:
    """`read_claims` of some lines of a file, each with its line number, in file order."""
    batch = Batch(source=source)
    signing = policy if policy is not None and policy.policy.signing else None
    for number, raw in numbered:
        try:
            _read_line(batch, raw, source, number, signing)
        except Exception as exc:  # one guard per line: a bug costs this line, not the file
            batch.errors.append(LineError(source, number, "claim", internal_error(exc)))
    return batch


def _read_line(
    batch: Batch,
    raw: bytes | str | Claim,
    source: str,
    number: int,
    signing: CompiledPolicy | None,
) -> None:
    """Read one line into the batch (`signing`: the policy, when it requires signatures)."""
    if isinstance(raw, Claim):
        claim = raw
    elif not raw or raw.isspace():  # a blank line (no copy made to find out)
        return
    else:
        try:
            claim = decode_claim(raw, share=False)  # held once per run: no strings to share
        except DecodeError as exc:
            batch.errors.append(LineError(source, number, "claim", str(exc)))
            return
    unsigned = signature_problem(signing, claim.envelope) if signing is not None else None
    if unsigned is not None:
        batch.errors.append(LineError(source, number, "signature", unsigned))
        return
    key = (claim.subject, claim.field)
    held = batch.facts.get(key)
    if held is None:
        batch.facts[key] = {claim.claim_id: (claim, number)}
    else:
        previous = held.get(claim.claim_id)
        if previous is not None:
            if previous[0].envelope != claim.envelope:
                batch.errors.append(
                    LineError(
                        source,
                        number,
                        "claim_id",
                        f"{claim.claim_id!r} was already used for this fact with other content",
                    )
                )
            return
        held[claim.claim_id] = (claim, number)
    batch.claims += 1


def resolve_batch(batch: Batch, policy: CompiledPolicy, now_us: int) -> Iterator[dict[str, Any]]:
    """One decision per fact, all claims of a fact taken as one observation at `now_us`.

    Every record yielded encodes. Should deciding a fact fail, the fact is decided
    `rejected` with the reason `internal_error: <type>: <message>` (every claim listed
    `rejected`), and each of its lines is an error with that reason, as the worker dead-
    letters the claims of such a fact. The errors end up in `batch.errors`, sorted by line,
    once the iteration is done.
    """
    for _key, record, _line in _resolved(batch, policy, now_us):
        yield record


def resolve_lines(batch: Batch, policy: CompiledPolicy, now_us: int) -> Iterator[bytes]:
    """`resolve_batch` as JSON lines (each record serialized once)."""
    for _key, _record, line in _resolved(batch, policy, now_us):
        yield line


def resolve_keyed(
    batch: Batch, policy: CompiledPolicy, now_us: int
) -> Iterator[tuple[tuple[str, str], bytes]]:
    """`resolve_lines`, each line with the (subject, field) it is sorted by."""
    for key, _record, line in _resolved(batch, policy, now_us):
        yield key, line


def _resolved(
    batch: Batch, policy: CompiledPolicy, now_us: int
) -> Iterator[tuple[tuple[str, str], dict[str, Any], bytes]]:
    for key in sorted(batch.facts):
        decided = _decide_fact(batch, batch.claims_of(key), policy, now_us)
        if decided is not None:
            record, line = decided
            yield key, record, line
    batch.errors.sort(key=lambda e: (e.source, e.line))


def _decide_fact(
    batch: Batch, claims: list[Claim], policy: CompiledPolicy, now_us: int
) -> tuple[dict[str, Any], bytes] | None:
    """The fact's decision; on a failure, its `rejected` decision (see `processor.set_aside`)."""
    try:
        return _decided(claims, policy, now_us)
    except Exception as exc:
        failure: Exception = exc
    for claim in claims:
        batch.errors.append(_claim_error(batch, claim, failure))
    _reason, record = set_aside(policy, claims[0].fact_key, claims, failure, now_us)
    return record, dumps_line(record)


def _decided(
    claims: list[Claim], policy: CompiledPolicy, now_us: int
) -> tuple[dict[str, Any], bytes]:
    """The decision of one fact and its JSON line (so it is known to encode)."""
    record = resolve(claims, policy, now_us)
    return record, dumps_line(record)


def _claim_error(batch: Batch, claim: Claim, exc: BaseException) -> LineError:
    kept = batch.facts.get((claim.subject, claim.field), {}).get(claim.claim_id)
    source, line = (batch.source, kept[1]) if kept is not None else ("?", 0)
    return LineError(source, line, "claim", internal_error(exc))
