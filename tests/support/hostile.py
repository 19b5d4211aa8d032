"""A hostile corpus of claims-topic records, and what a correct worker must do with each.

`hostile_corpus(seed, count)` builds `count` instances of the kinds in KINDS (each kind at
least once when `count >= len(KINDS)`), in an order shuffled by the seed; the same seed
gives the same records. A redelivery kind brings its original record first.

The claims follow the corpus's own policy, `hostile_policy_yaml()`: one field of every
field type (enum, string, text, bool, integer, number, money, quantity, timestamp, json,
see FIELDS) with `settle: 0s`, so each claim is decided by the record that brings it.
Every claim is observed at its record's time (T0 plus 1 ms per record); `timestamp_us` is
the broker time (LogAppendTime) the record would carry.

`expect` (docs/concepts.md#bad-input):
- `decided`: a decision lists the claim id; `rejected` marks a claim that breaks its
  field's contract (decided `rejected`, and copied to the DLQ with the reason);
- `dead_letter`: a record to the DLQ topic with a `claimwatch.reason` header, nothing decided;
- `redelivery`: ignored, the same claim id and content as an earlier record of the fact;
- `ignored_tick`: a record under the tick key that is malformed or later than its broker time.

`offline` is what `claimwatch resolve` must do with the value as one line of a JSON-lines
file: `decided` (its fact's decision is printed), `bad` (reported as FILE:LINE), or None
when the value cannot be such a line (null, not UTF-8, blank, or holding a newline).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339

from tests.support.hostile_kinds import SIMPLE, Drop, Raw, encode

T0: Final = parse_rfc3339("2026-09-14T09:00:00Z")
MS: Final = 1_000
#: How far a record's broker time is ahead of its claim's observation (the runtime's default
#: tick lateness, so the partition clock stands exactly at the observation).
LATENESS_US: Final = 1_000_000
TICK_KEY: Final = b"__tick__"
EXPECTS: Final = ("decided", "dead_letter", "redelivery", "ignored_tick")

#: Field name -> (policy entry, a value that keeps the field's contract).
FIELDS: Final[dict[str, tuple[str, Any]]] = {
    "status": ("{type: enum, values: [paid, unpaid]}", "paid"),
    "name": ("{type: string, case: fold, whitespace: collapse}", "Ada Lovelace"),
    "note": ("{type: text}", "The invoice was paid on time."),
    "flag": ("{type: bool}", True),
    "count": ("{type: integer}", 12),
    "score": ("{type: number, tolerance: {abs: 0.01}}", 0.5),
    "price": ("{type: money, currency: USD}", {"amount": 1250, "currency": "USD"}),
    "weight": ("{type: quantity, unit: kg}", {"value": 3.5, "unit": "kg"}),
    "seen_at": ("{type: timestamp}", "2026-09-14T08:00:00Z"),
    "blob": ("{type: json}", {"a": [1, 2.5, None]}),
}
SOURCES: Final = ("ledger", "replica", "user")


def hostile_policy_yaml() -> str:
    """The policy every corpus claim is decided under (settle 0s: decided on arrival)."""
    fields = "\n".join(f"  {name}: {entry}" for name, (entry, _) in FIELDS.items())
    return (
        "policy_version: hostile-1\n"
        "defaults: {freshness: 5m, settle: 0s, clock_skew: 5s, grace: 30s}\n"
        "sources:\n"
        "  ledger: {authority: system_of_record, lineage: ledger}\n"
        "  replica: {authority: cached, lineage: ledger}\n"
        "  user: {authority: asserted}\n"
        f"fields:\n{fields}\n"
    )


@dataclass(frozen=True, slots=True)
class HostileMessage:
    """One record of the claims topic and what a correct worker must do with it."""

    kind: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    expect: str = "decided"
    #: the claim id the record carries: a `decided` record brings it into a decision
    claim_id: str | None = None
    #: decided as a `rejected` claim and copied to the DLQ (True), accepted (False), or
    #: either (None: a leap second, which the parser may or may not take)
    rejected: bool | None = False
    timestamp_us: int = T0
    offline: str | None = None


def valid_claims(seed: int, count: int, start_us: int = T0) -> list[dict[str, Any]]:
    """Ordinary claims under the corpus policy: a few subjects, every field, 1 ms apart."""
    rng = random.Random(seed)
    claims = []
    for n in range(count):
        name = rng.choice(sorted(FIELDS))
        status = rng.choice(("ok", "ok", "ok", "not_found", "unavailable"))
        claim: dict[str, Any] = {
            "claim_id": f"v{seed}-{n}",
            "subject": f"account:{rng.randrange(8)}",
            "field": name,
            "source": rng.choice(SOURCES),
            "observed_at": format_rfc3339(start_us + n * MS),
            "status": status,
        }
        if status == "ok":
            claim["value"] = FIELDS[name][1]
        claims.append(claim)
    return claims


class _Builder:
    """Numbers the records and makes their envelopes and bytes."""

    def __init__(self, seed: int, start_us: int = T0) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.start_us = start_us
        self.index = 0

    @property
    def now(self) -> int:
        return self.start_us + self.index * MS

    def envelope(self, name: str = "status", **over: Any) -> dict[str, Any]:
        """A good claim of `name` on a subject of its own, then the overrides."""
        envelope: dict[str, Any] = {
            "claim_id": f"h{self.seed}-{self.index}",
            "subject": f"hostile:{self.index}-{self.rng.randrange(10**6)}",
            "field": name,
            "source": self.rng.choice(SOURCES),
            "observed_at": format_rfc3339(self.now),
            "status": "ok",
            "value": FIELDS[name][1] if name in FIELDS else "anything",
        }
        for key, value in over.items():
            if isinstance(value, Drop):
                envelope.pop(key, None)
            else:
                envelope[key] = value
        return envelope

    def message(
        self,
        kind: str,
        value: bytes | None,
        expect: str,
        *,
        key: bytes | None = None,
        envelope: dict[str, Any] | None = None,
        rejected: bool | None = False,
        headers: list[tuple[str, bytes]] | None = None,
        offline: str | None = "",
    ) -> HostileMessage:
        """One record; the key defaults to the envelope's fact key."""
        if key is None and envelope is not None and _is_text(envelope.get("subject")):
            key = f"{envelope['subject']}|{envelope['field']}".encode("utf-8", "replace")
        made = HostileMessage(
            kind=kind,
            key=key,
            value=value,
            headers=headers if headers is not None else _ce_headers(self.index),
            expect=expect,
            claim_id=_text(envelope.get("claim_id")) if envelope else None,
            rejected=rejected,
            timestamp_us=self.now + LATENESS_US,
            offline=_offline(value, expect) if offline == "" else offline,
        )
        self.index += 1
        return made


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _ce_headers(index: int) -> list[tuple[str, bytes]]:
    return [("ce_id", f"h-{index}".encode()), ("ce_type", b"claim")]


def _offline(value: bytes | None, expect: str) -> str | None:
    """What `claimwatch resolve` does with the value as a line (None: it cannot be one)."""
    if value is None or not value.strip() or b"\n" in value or b"\r" in value:
        return None
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "decided" if expect in ("decided", "redelivery") else "bad"


Kind = Callable[[_Builder], list[HostileMessage]]
KINDS: dict[str, Kind] = {}


def kind(name: str) -> Callable[[Kind], Kind]:
    """Register a kind of hostile record under `name`."""

    def register(make: Kind) -> Kind:
        KINDS[name] = make
        return make

    return register


def _simple(name: str, spec: tuple[str, dict[str, Any], str]) -> Kind:
    field_name, over, outcome = spec

    expect = "dead_letter" if outcome in ("dead", "expired") else "decided"
    rejected = {"ok": False, "rejected": True}.get(outcome)
    offline = "decided" if outcome == "expired" else ""

    def make(b: _Builder) -> list[HostileMessage]:
        envelope = b.envelope(field_name, **over)
        value = encode(envelope)
        return [
            b.message(name, value, expect, envelope=envelope, rejected=rejected, offline=offline)
        ]

    return make


for _name, _spec in SIMPLE.items():
    KINDS[_name] = _simple(_name, _spec)


def _bytes_kind(name: str, value: bytes | None, expect: str = "dead_letter") -> None:
    KINDS[name] = lambda b: [b.message(name, value, expect, key=b"k")]


_bytes_kind("not_json", b"{claim_id: nope")
_bytes_kind("invalid_utf8", b'{"claim_id": "\xff\xfe", "subject": "\xc3("}')
_bytes_kind("empty_value", b"")
_bytes_kind("blank_value", b" \t\r\n ")
_bytes_kind("tombstone", None)
_bytes_kind("json_null", b"null")
_bytes_kind("json_array", b'[{"claim_id": "a"}]')
_bytes_kind("json_number", b"1e308")
_bytes_kind("json_string", b'"a claim"')
_bytes_kind("nan_literal", b'{"claim_id": "n", "value": NaN}')
_bytes_kind("infinity_literal", b'{"claim_id": "i", "value": -Infinity}')
_bytes_kind("number_overflow_literal", b'{"claim_id": "o", "value": 1e400}')
_bytes_kind("too_deep_for_the_parser", b"[" * 2000 + b"]" * 2000)


@kind("truncated_json")
def _truncated(b: _Builder) -> list[HostileMessage]:
    text = encode(b.envelope())
    return [b.message("truncated_json", text[: len(text) // 2], "dead_letter", key=b"k")]


@kind("byte_order_mark")
def _bom(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    return [b.message("byte_order_mark", b"\xef\xbb\xbf" + encode(envelope), "dead_letter")]


@kind("trailing_garbage")
def _trailing(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    return [b.message("trailing_garbage", encode(envelope) + b" }", "dead_letter")]


def _keyed(name: str, key: Callable[[_Builder], bytes | None]) -> None:
    def make(b: _Builder) -> list[HostileMessage]:
        envelope = b.envelope()
        k = key(b)
        message = b.message(name, encode(envelope), "decided", envelope=envelope)
        return [replace(message, key=k)]

    KINDS[name] = make


_keyed("null_key", lambda b: None)
_keyed("garbage_key", lambda b: b"\xff\x00|\xfe garbage")
_keyed("other_fact_key", lambda b: f"hostile:other-{b.index}|status".encode())


def _sized(name: str, size: int, expect: str) -> None:
    def make(b: _Builder) -> list[HostileMessage]:
        envelope = b.envelope("blob", value="")
        envelope["value"] = "x" * (size - len(encode(envelope)))
        return [b.message(name, encode(envelope), expect, envelope=envelope)]

    KINDS[name] = make


_sized("value_63_kib", 63 * 1024, "decided")
_sized("value_65_kib", 65 * 1024, "dead_letter")
# about 1 MB: within the broker's default message.max.bytes (1,048,588), beyond the DLQ copy limit
_sized("value_about_1_mb", 1_040_000, "dead_letter")


def _nested(name: str, depth: int, expect: str) -> None:
    """A json value `depth` levels deep (the envelope adds one), written as text."""
    opens = b"".join(b"[" if level % 2 else b'{"k":' for level in range(depth))
    closes = b"".join(b"]" if level % 2 else b"}" for level in reversed(range(depth)))

    def make(b: _Builder) -> list[HostileMessage]:
        envelope = b.envelope("blob", value=Raw(opens + b"1" + closes))
        return [b.message(name, encode(envelope), expect, envelope=envelope)]

    KINDS[name] = make


_nested("nesting_within_the_limit", 60, "decided")
_nested("nesting_beyond_the_limit", 65, "dead_letter")
_nested("nesting_1000_levels", 1000, "dead_letter")


@kind("lone_surrogate_in_subject")
def _surrogate(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope(subject="hostile:@@")
    text = encode(envelope).replace(b"hostile:@@", b"hostile:\\ud800")
    return [b.message("lone_surrogate_in_subject", text, "dead_letter", key=b"k")]


@kind("lone_surrogate_in_source")
def _surrogate_source(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope(source="ledger@@")
    text = encode(envelope).replace(b"ledger@@", b"ledger\\udfff")
    return [b.message("lone_surrogate_in_source", text, "dead_letter", envelope=envelope)]


@kind("duplicate_json_keys")
def _duplicate_keys(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    first = envelope["claim_id"]
    text = encode(envelope).replace(b"{", b'{"claim_id":"shadowed",', 1)
    return [
        b.message("duplicate_json_keys", text, "decided", envelope={**envelope, "claim_id": first})
    ]


@kind("garbage_headers")
def _headers(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    junk = [
        ("ce_id", b"\xff\xfe"),
        ("", b""),
        ("x" * 1000, b"\x00" * 100),
        ("ce_time", b"yesterday"),
    ]
    return [
        b.message("garbage_headers", encode(envelope), "decided", envelope=envelope, headers=junk)
    ]


@kind("redelivery_same_content")
def _redelivery(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    first = b.message("redelivery_original", encode(envelope), "decided", envelope=envelope)
    reordered = dict(reversed(list(envelope.items())))  # same content, other key order
    again = b.message("redelivery_same_content", encode(reordered), "redelivery", envelope=envelope)
    return [first, again]


@kind("redelivery_other_content")
def _forgery(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    first = b.message("redelivery_original", encode(envelope), "decided", envelope=envelope)
    other = {**envelope, "value": "unpaid"}
    again = b.message("redelivery_other_content", encode(other), "dead_letter", envelope=other)
    return [first, again]


def _tick(name: str, value: bytes) -> None:
    KINDS[name] = lambda b: [b.message(name, value, "ignored_tick", key=TICK_KEY, offline="bad")]


_tick("tick_not_json", b"{__tick__: soon")
_tick("tick_int64_max", b'{"__tick__": 9223372036854775807}')
_tick("tick_beyond_any_number", b'{"__tick__": 1' + b"0" * 400 + b"}")
_tick("tick_string", b'{"__tick__": "x"}')
_tick("tick_negative", b'{"__tick__": -1}')


@kind("tick_key_on_a_claim")
def _tick_claim(b: _Builder) -> list[HostileMessage]:
    envelope = b.envelope()
    name, value = "tick_key_on_a_claim", encode(envelope)
    return [
        b.message(name, value, "ignored_tick", key=TICK_KEY, envelope=envelope, offline="decided")
    ]


def hostile_corpus(seed: int, count: int, start_us: int = T0) -> list[HostileMessage]:
    """`count` hostile records (every kind once per len(KINDS)), shuffled by the seed.

    The first record is observed at `start_us`, each next one 1 ms later.
    """
    names = sorted(KINDS)
    plan = [names[n % len(names)] for n in range(count)]
    random.Random(seed).shuffle(plan)
    builder = _Builder(seed, start_us)
    corpus: list[HostileMessage] = []
    for name in plan:
        corpus += KINDS[name](builder)
    return corpus
