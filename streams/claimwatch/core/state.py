"""The live state of one fact, as an explicit value that a changelog can carry (JSON-able)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any, Final

from claimwatch.core.alerts.lag_state import FactTrack
from claimwatch.core.claim import (
    EARLIEST_OBSERVED_US,
    LATEST_OBSERVED_US,
    Claim,
    EnvelopeError,
    claim_from_envelope,
    fact_key,
)
from claimwatch.core.timeutil import as_rfc3339, format_rfc3339

#: Short names of the envelope keys in stored state; other keys go under "x".
_SHORT: Final = {
    "claim_id": "i",
    "source": "s",
    "observed_at": "t",
    "status": "u",
    "value": "v",
    "lineage": "l",
    "trace_id": "r",
    "agent_id": "a",
    "tool": "o",
    "confidence": "c",
    "contract_version": "k",
    "authority": "y",
}
_LONG: Final = {short: key for key, short in _SHORT.items()}
#: Keys a stored claim leaves out because the fact key carries them.
_IMPLIED: Final = ("subject", "field")


def content_hash(envelope: Mapping[str, Any]) -> str:
    """A short digest of a claim's content, independent of key order."""
    text = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@dataclass(slots=True)
class FactState:
    """Live claims, seen ids, the open decision window and the last decision of one fact.

    `seen` holds the ids of claims no longer live (pruned) that are still within the
    horizon; the ids of live claims are read from `claims` itself.
    `due_us` is the next clock time at which the fact must be decided: its window's
    deadline, or the moment one of its deciding claims goes stale.
    """

    subject: str
    field: str
    partition: int
    claims: list[Claim] = dc_field(default_factory=list)
    seen: dict[str, tuple[str, int]] = dc_field(default_factory=dict)
    window: tuple[int, int] | None = None
    due_us: int | None = None
    last_id: str | None = None
    last_outcome: str | None = None
    #: input offset and clock time of the record that produced the last decision
    decided_offset: int | None = None
    decided_at: int | None = None
    #: what the replica-lag detector follows of this fact (see core.alerts.lag_fact)
    track: FactTrack | None = None
    #: ids of the claims added since the fact's last decision: none of them is pruned before
    #: a decision lists it (one pruning would drop is kept, `superseded`, and listed
    #: `stale`), so every claim is answered
    unlisted: set[str] = dc_field(default_factory=set)
    #: the fact's key (made once)
    key: str = dc_field(default="", init=False, repr=False, compare=False)
    #: the clock time the claims were last pruned at, while they stay as pruned then (not
    #: stored: a restored state is pruned again; see `PartitionProcessor._prune`)
    pruned_at: int | None = dc_field(default=None, init=False, repr=False, compare=False)
    #: the bytes of the live claims' envelopes (see core.size), once counted (not stored)
    claim_bytes: int | None = dc_field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = fact_key(self.subject, self.field)

    def held_bytes(self, size_of: Callable[[Claim], int]) -> int:
        """The bytes of the live claims, counted with `size_of` on first use."""
        held = self.claim_bytes
        if held is None:
            held = self.claim_bytes = sum(size_of(c) for c in self.claims)
        return held

    def add_bytes(self, size: int) -> None:
        """A claim of `size` bytes joined (or, negative, left) the live claims."""
        if self.claim_bytes is not None:
            self.claim_bytes += size

    def seen_hash(self, claim_id: str) -> str | None:
        """The content digest of a claim id this fact has seen, if any."""
        for claim in self.claims:
            if claim.claim_id == claim_id:
                return content_hash(claim.envelope)
        known = self.seen.get(claim_id)
        return known[0] if known is not None else None

    def to_obj(self, claim_form: Callable[[Claim], Any] | None = None) -> dict[str, Any]:
        """The compact JSON-able form stored in the table.

        `claim_form` gives each claim's stored form (by default `pack`; a store may give
        `pack`'s output already serialized, made once per claim).
        """
        form = claim_form or pack
        obj: dict[str, Any] = {
            "s": self.subject,
            "f": self.field,
            "p": self.partition,
            "c": [form(c) for c in self.claims],
        }
        if self.seen:
            obj["n"] = {cid: [h, t] for cid, (h, t) in self.seen.items()}
        if self.window is not None:
            obj["w"] = list(self.window)
        if self.due_us is not None:
            obj["d"] = self.due_us
        if self.last_id is not None:
            obj["i"] = self.last_id
            obj["o"] = self.last_outcome
        if self.decided_offset is not None:
            obj["q"] = [self.decided_offset, self.decided_at]
        if self.track is not None:
            obj["g"] = self.track.pack()
        if self.unlisted:
            obj["z"] = sorted(self.unlisted)
        return obj

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> FactState:
        """Rebuild a state from its stored form."""
        subject, field_name = obj["s"], obj["f"]
        window = obj.get("w")
        return cls(
            subject=subject,
            field=field_name,
            partition=obj["p"],
            claims=[unpack(item, subject, field_name) for item in obj["c"]],
            seen={cid: (h, t) for cid, (h, t) in obj.get("n", {}).items()},
            window=(window[0], window[1]) if window else None,
            due_us=obj.get("d"),
            last_id=obj.get("i"),
            last_outcome=obj.get("o"),
            decided_offset=obj["q"][0] if "q" in obj else None,
            decided_at=obj["q"][1] if "q" in obj else None,
            track=FactTrack.unpack(obj["g"]) if "g" in obj else None,
            unlisted=set(obj.get("z", ())),
        )


def pack(claim: Claim) -> dict[str, Any]:
    """A claim in its compact stored form: short keys, time as an integer when lossless."""
    packed: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in claim.envelope.items():
        if key in _IMPLIED:
            continue
        short = _SHORT.get(key)
        if (
            short is None
            or (key == "observed_at" and type(value) is not str)
            or (key == "status" and value is None)
        ):
            # kept as sent: a time sent as a number under "t" would be read back as
            # microseconds (a valid time), a null status under "u" as a missing one
            extra[key] = value
        elif key == "status" and value == "ok":
            continue
        elif (
            key == "observed_at"
            and claim.observed_us is not None
            and value == as_rfc3339(value, claim.observed_us)  # canonical: no rendering
        ):
            packed[short] = claim.observed_us
        else:
            packed[short] = value
    if "status" not in claim.envelope:
        packed["u"] = None
    if extra:
        packed["x"] = extra
    if claim.arrival_error:
        packed["e"] = claim.arrival_error
    if claim.superseded:
        packed["m"] = claim.superseded
    return packed


def unpack(item: Mapping[str, Any], subject: str, field_name: str) -> Claim:
    """The claim of a stored item, with its envelope as it was sent."""
    envelope: dict[str, Any] = {"subject": subject, "field": field_name}
    for short, value in item.items():
        key = _LONG.get(short)
        if key is None:
            continue
        envelope[key] = _stored_time(value) if key == "observed_at" else value
    if "u" not in item:
        envelope["status"] = "ok"
    elif item["u"] is None:
        del envelope["status"]
    envelope.update(item.get("x", {}))
    try:
        claim = claim_from_envelope(envelope)
    except EnvelopeError as exc:
        claim = _stored_before(envelope, str(exc))
    error, superseded = item.get("e"), item.get("m")
    if error or superseded:
        claim = replace(claim, arrival_error=error or None, superseded=superseded or None)
    return claim


def _stored_time(value: Any) -> Any:
    """The `observed_at` text of a stored time: microseconds as `pack` writes them.

    An integer beyond the times a claim may carry (written as sent by an older release,
    which stored a time sent as a number under the same key) is left as it is: the claim
    stays rejected instead of its fact failing to load.
    """
    if type(value) is int and EARLIEST_OBSERVED_US <= value <= LATEST_OBSERVED_US:
        return format_rfc3339(value)
    return value


def _stored_before(envelope: Mapping[str, Any], reason: str) -> Claim:
    """A stored claim that today's envelope checks refuse, kept as a rejected claim.

    An older version accepted it (say, a control character in its source): restoring the
    fact must not fail on it, and the fact's decisions still list it, with the reason.
    """
    return Claim(
        claim_id=str(envelope.get("claim_id")),
        subject=str(envelope["subject"]),
        field=str(envelope["field"]),
        source=str(envelope.get("source")),
        observed_us=None,
        time_error=f"no longer a valid claim: {reason}",
        status=envelope.get("status"),
        envelope=envelope,
    )
