"""The alert record as plain JSON (`claimwatch.models.alert`) and its deterministic id."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol, TypedDict, TypeVar

#: Most decision ids an alert carries as samples.
MAX_SAMPLE_IDS: Final = 10
#: Longest name (field, fact, source, decision id) the detectors keep or send: a longer one
#: is clipped to a bounded label by `bounded_name`.
MAX_NAME_CHARS: Final = 1024
#: Hex digits of the digest that ends a clipped name (two clipped names differ in it).
_NAME_DIGEST_HEX: Final = 16


class Alert(TypedDict, total=False):
    """One alert; spike alerts carry the count figures, lag alerts the lag figures."""

    alert_id: str
    kind: str
    status: str
    field: str
    source: str
    previous_status: str
    window_start: str
    window_end: str
    count: int
    decisions: int
    expected: float
    p_value: float
    sources: list[dict[str, Any]]
    source_pairs: list[dict[str, Any]]
    sample_decision_ids: list[str]
    lag_seconds: dict[str, Any]
    budget_seconds: float | None
    claims: int
    dissent_ratio: float
    stale_ratio: float


def bounded_name(name: str) -> str:
    """`name`, or when it is longer than MAX_NAME_CHARS a label of exactly that length.

    The label is the name's start, `#` and a digest of the whole name: deterministic (live
    and replayed detectors name a source alike), distinct for distinct names, and short
    enough that a claim with a long source, subject or field never makes the record of
    its field's entries (up to 500 decisions) fail the detectors' input validation.
    """
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.blake2b(name.encode(errors="surrogatepass"), digest_size=_NAME_DIGEST_HEX // 2)
    return name[: MAX_NAME_CHARS - _NAME_DIGEST_HEX - 1] + "#" + digest.hexdigest()


def alert_id(kind: str, key: str, status: str, window_start: str) -> str:
    """A hash of kind, field (and source), status and window start: replays reproduce it."""
    digest = hashlib.sha256()
    for part in (kind, key, status, window_start):
        digest.update(part.encode())
        digest.update(b"\x1f")
    return "alr_" + digest.hexdigest()[:32]


class FieldState(Protocol):
    """What every detector's per-field state has: the field it belongs to."""

    field: str


S = TypeVar("S", bound=FieldState)


def state_for(state: S | None, decision: Mapping[str, Any], initial: Callable[[str], S]) -> S:
    """The state a decision is stepped on: `state`, or `initial(field)` (no history) if None.

    ValueError when `state` belongs to another field than the decision.
    """
    name = str(decision["field"])
    if state is None:
        return initial(name)
    if state.field != name:
        raise ValueError(f"decision of field {name!r} fed to the state of {state.field!r}")
    return state
