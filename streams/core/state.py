"""The live state of one fact, as an explicit value that a changelog can carry (JSON-able)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any

from streams.core.claim import Claim, claim_from_envelope

#: Keys a stored claim leaves out because the fact key carries them.
_IMPLIED = ("subject", "field")


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

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.field}"

    def seen_hash(self, claim_id: str) -> str | None:
        """The content digest of a claim id this fact has seen, if any."""
        for claim in self.claims:
            if claim.claim_id == claim_id:
                return content_hash(claim.envelope)
        known = self.seen.get(claim_id)
        return known[0] if known is not None else None

    def to_obj(self) -> dict[str, Any]:
        """The compact JSON-able form stored in the table."""
        obj: dict[str, Any] = {
            "s": self.subject,
            "f": self.field,
            "p": self.partition,
            "c": [_pack(s) for s in self.claims],
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
            claims=[_unpack(item, subject, field_name) for item in obj["c"]],
            seen={cid: (h, t) for cid, (h, t) in obj.get("n", {}).items()},
            window=(window[0], window[1]) if window else None,
            due_us=obj.get("d"),
            last_id=obj.get("i"),
            last_outcome=obj.get("o"),
        )


def _pack(claim: Claim) -> Any:
    envelope = {k: v for k, v in claim.envelope.items() if k not in _IMPLIED}
    return [envelope, claim.arrival_error] if claim.arrival_error else envelope


def _unpack(item: Any, subject: str, field_name: str) -> Claim:
    envelope, error = (item[0], item[1]) if isinstance(item, list) else (item, None)
    claim = claim_from_envelope({"subject": subject, "field": field_name, **envelope})
    return replace(claim, arrival_error=error) if error else claim
