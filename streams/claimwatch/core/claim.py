"""A claim as the core sees it: the envelope as received plus its parsed essentials."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any, Final

from claimwatch.core.limits import CLEAN, clip, describe, scan
from claimwatch.core.timeutil import TimestampError, parse_rfc3339
from claimwatch.models.statuses import DECIDE_MODES, EVIDENCE_STATUSES

if TYPE_CHECKING:  # (they import this module)
    from claimwatch.core.contract import ContractCheck
    from claimwatch.core.policy import FieldRule
    from claimwatch.models.policy import Authority

#: Keys without which a message is not a claim at all (it goes to the dead-letter topic).
REQUIRED_KEYS: Final = ("claim_id", "subject", "field", "source")
MAX_CLAIM_ID: Final = 128
#: Optional keys that must be strings when present (null counts as absent); another type
#: breaks the claim's contract: it is decided `rejected`.
OPTIONAL_TEXT_KEYS: Final = (
    "lineage",
    "authority",
    "contract_version",
    "agent_id",
    "tool",
    "trace_id",
    "signature",
)
#: The `decide` mode that asks for a decision on arrival (see models.statuses.Decide).
ON_ARRIVAL: Final = "on_arrival"
#: Observation times a claim may carry: years 0001 to 9998 in UTC (a year of room below the
#: last instant a record can show, for the decision deadlines that follow a claim).
EARLIEST_OBSERVED_US: Final = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
LATEST_OBSERVED_US: Final = 253_370_764_799_999_999  # 9998-12-31T23:59:59.999999Z
#: Longest `observed_at` text worth parsing (RFC 3339 with nanoseconds and an offset is 35).
_MAX_TIME_TEXT: Final = 64
#: Control characters (Unicode category Cc) are refused in the keys that name a fact.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class EnvelopeError(ValueError):
    """A message that is not a claim: it cannot be attributed to a fact."""


@dataclass(slots=True)
class Claim:
    """One claim. `observed_us` is None when the time was missing or unparseable.

    `arrival_error` is set by the stream processor when the claim was refused on arrival
    (for example, too far ahead of the partition clock): it then stays rejected.

    A claim is never changed once built (`dataclasses.replace` makes a changed copy). It is
    not declared frozen because every claim read would pay for that: a frozen dataclass
    sets each field through `object.__setattr__`.
    """

    claim_id: str
    subject: str
    field: str
    source: str
    observed_us: int | None
    time_error: str | None
    #: the received status, checked later (typed Any: mypyc cannot compile a dataclass
    #: field annotated `object` under postponed annotations)
    status: Any
    envelope: Mapping[str, Any]
    arrival_error: str | None = None
    #: a break of the envelope's contract found when the claim was built (an optional key
    #: of the wrong type, a number beyond the limits): the claim stays rejected
    contract_error: str | None = None
    #: why the stream processor no longer lets this claim vote although no decision has
    #: listed it yet (superseded by its source, beyond a cap, past the horizon): it stays
    #: in its fact until the next decision lists it `stale`, then it is pruned
    superseded: str | None = None
    #: the key of the claim's fact (made once: the step asks for it several times a claim)
    fact_key: str = dc_field(default="", init=False, repr=False, compare=False)
    #: what a store that keeps the claim live between records works out about it once
    #: instead of at every decision of its fact (the worker's fact table); else None
    memo: ClaimMemo | None = dc_field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.fact_key = fact_key(self.subject, self.field)

    @property
    def has_value(self) -> bool:
        return "value" in self.envelope

    @property
    def value(self) -> Any:
        return self.envelope.get("value")

    @property
    def is_evidence(self) -> bool:
        """Whether the status is one that proves something (`ok` or `not_found`)."""
        return isinstance(self.status, str) and self.status in EVIDENCE_STATUSES

    @property
    def on_arrival(self) -> bool:
        """Whether the claim asks its fact to be decided at once (`"decide": "on_arrival"`).

        A claim whose `decide` breaks the contract does not: it is decided `rejected` when
        its fact's window closes, like any claim that breaks it.
        """
        return self.envelope.get("decide") == ON_ARRIVAL and self.contract_error is None

    @property
    def lineage_label(self) -> str | None:
        """The producer's `lineage` when it is a non-empty string, else None (the default)."""
        lineage = self.envelope.get("lineage")
        return lineage if isinstance(lineage, str) and lineage else None


@dataclass(slots=True)
class ClaimMemo:
    """What is worked out once about a live claim, for the decisions of its fact to reuse.

    Made only where claims stay live between records (the worker's fact table), not in a
    replay, which holds every claim of a file and so would pay for it in memory. `stored`:
    the claim's stored form, written with its fact at every change of the fact (see
    `FactState.to_obj`); `verdict`: the part of its contract check that does not depend on
    the clock, against `rule` (see `contract.check`); `record`: the claim's part of a
    decision record up to its lineage, with the authority and lineage it was made for (see
    `decision.claim_record`); `tag`: the short digest of its claim id that the replica-lag
    detector's fact track keeps (see `core.alerts.lag_fact`).
    """

    stored: Any = None
    rule: FieldRule | None = None
    verdict: ContractCheck | None = None
    record: tuple[Authority, str, dict[str, Any]] | None = None
    tag: str | None = None


def memo_of(claim: Claim) -> ClaimMemo:
    """The claim's memo, made empty on first use."""
    memo = claim.memo
    if memo is None:
        memo = claim.memo = ClaimMemo()
    return memo


def fact_key(subject: str, field: str) -> str:
    """The key of a fact, as used for Kafka messages and state.

    Interned: the deadline index and the states hold a fact's key many times over (one
    string object for all of them, not one per claim).
    """
    return sys.intern(f"{subject}|{field}")


def claim_from_envelope(
    envelope: Mapping[str, Any], share: bool = True, within_limits: bool = False
) -> Claim:
    """Build a Claim, or raise EnvelopeError when the message cannot be attributed to a fact.

    Contract problems (bad time, status, value, a wrongly typed optional key, a number
    beyond the limits) do not raise: they are judged per field by the resolution, so the
    claim is still recorded as rejected in its fact's decision. `share` interns the
    repeated strings of a claim that a long-lived state keeps (see `_share_names`); a
    one-pass resolve of a file skips it (about 7 % of its time). `within_limits` is the
    decoder's word that the envelope keeps the limits `scan` checks (the codec gives it for
    bytes where that is sure); the scan is then skipped.
    """
    if type(envelope) is not dict and not isinstance(envelope, Mapping):
        raise EnvelopeError(f"a claim must be a JSON object, got {_json_kind(envelope)}")
    found = CLEAN if within_limits else scan(envelope)
    if found.refused is not None:
        raise EnvelopeError(found.refused)
    get: Callable[[str], Any] = envelope.get
    claim_id, subject, field, source = get("claim_id"), get("subject"), get("field"), get("source")
    # the usual claim in one test: four non-empty plain strings, printable together
    usual = (
        type(claim_id) is str
        and type(subject) is str
        and type(field) is str
        and type(source) is str
        and claim_id
        and subject
        and field
        and source
        and f"{claim_id}{subject}{field}{source}".isprintable()
    )
    if not usual:
        _check_names(envelope)
    if len(claim_id) > MAX_CLAIM_ID:
        raise EnvelopeError(f"`claim_id` is longer than {MAX_CLAIM_ID} characters")
    if "|" in field:
        raise EnvelopeError(
            "`field` contains `|`, which separates subject and field in the fact key"
        )
    if share and type(envelope) is dict:
        _share_names(envelope)
        subject, field, source = envelope["subject"], envelope["field"], envelope["source"]
    observed_us, time_error = _observed(envelope)
    return Claim(
        claim_id,
        subject,
        field,
        source,
        observed_us,
        time_error,
        get("status"),
        envelope,
        None,
        _contract_error(envelope) or found.number,
    )


def _check_names(envelope: Mapping[str, Any]) -> None:
    """Raise EnvelopeError for the first required key that is no non-empty printable string."""
    for key in REQUIRED_KEYS:
        raw = envelope.get(key)
        if raw is None:
            raise EnvelopeError(f"missing required key `{key}`")
        if not isinstance(raw, str) or not raw:
            raise EnvelopeError(f"`{key}` must be a non-empty string, got {describe(raw)}")
        control = None if raw.isprintable() else _CONTROL.search(raw)
        if control is not None:
            raise EnvelopeError(
                f"`{key}` contains the control character U+{ord(control.group()):04X} "
                f"at position {control.start()}"
            )


def _share_names(envelope: dict[str, Any]) -> None:
    """One string object for each subject, field, source, status, ..., however many claims.

    A decoder makes a new string for every value of every message; the live claims of a
    fact repeat these (and text values such as an enum's). Interned, each is held once (an
    equal string takes its place: nothing a reader can see changes). Long values are left
    as they are.
    """
    for key in _SHARED_KEYS.intersection(envelope):  # (the keys it has: none looked up twice)
        value = envelope[key]
        if type(value) is str and len(value) <= _SHARED_MAX:
            envelope[key] = sys.intern(value)


#: Longest string value shared (longer text is rarely repeated).
_SHARED_MAX: Final = 256
#: Envelope values that repeat across claims (see `_share_names`).
_SHARED_KEYS: Final = frozenset(
    (
        "subject",
        "field",
        "source",
        "status",
        "value",
        "lineage",
        "contract_version",
        "agent_id",
        "tool",
        "trace_id",
    )
)


def _observed(envelope: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """The observation time in microseconds, or None and why not."""
    raw = envelope.get("observed_at")
    if raw is None:
        return None, "missing `observed_at`"
    if isinstance(raw, str) and len(raw) > _MAX_TIME_TEXT:
        return None, (
            "`observed_at`: expected an RFC 3339 time such as 2026-09-14T09:12:03Z, "
            f"got a string of {len(raw)} characters"
        )
    try:
        observed_us = parse_rfc3339(raw)
    except TimestampError as exc:
        return None, f"`observed_at`: {exc}"
    except (OverflowError, ValueError):  # an offset that leaves the calendar
        observed_us = None
    if observed_us is None or not EARLIEST_OBSERVED_US <= observed_us <= LATEST_OBSERVED_US:
        return None, (
            f"`observed_at` {clip(repr(raw))} is outside the supported range "
            f"({_RANGE_TEXT}, in UTC)"
        )
    return observed_us, None


_RANGE_TEXT: Final = "0001-01-01T00:00:00Z to 9998-12-31T23:59:59.999999Z"


def _contract_error(envelope: Mapping[str, Any]) -> str | None:
    """A wrongly typed optional key, or a confidence out of 0..1 (None when all is well)."""
    get = envelope.get
    for key in OPTIONAL_TEXT_KEYS:
        value = get(key)
        if value is not None and type(value) is not str and not isinstance(value, str):
            return f"`{key}` must be a string, got {describe(value)}"
    decide = get("decide")
    if decide is not None and (type(decide) is not str or decide not in DECIDE_MODES):
        allowed = ", ".join(sorted(DECIDE_MODES))
        return f"`decide` must be one of {allowed} or null, got {describe(decide)}"
    confidence = get("confidence")
    if confidence is None:
        return None
    in_range = (isinstance(confidence, float) and 0.0 <= confidence <= 1.0) or (
        type(confidence) is int and 0 <= confidence <= 1
    )  # NaN compares false: out of range
    if not in_range:
        return f"`confidence` must be a number from 0 to 1 or null, got {describe(confidence)}"
    return None


def _json_kind(value: object) -> str:
    """What a decoded JSON value is, as a producer would say it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "null" if value is None else f"a {type(value).__name__}"
