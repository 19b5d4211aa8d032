"""Generated input for the whole claim path: hostile JSON, strings, clocks and orders.

The strategies here feed the properties of tests/unit/core/test_fuzz_*.py (hypothesis) and
the seeded streams of the differential test on a real broker
(tests/integration/test_differential_kafka.py, `random_stream`). They are not a list of
known triggers: every field type gets arbitrary JSON, every string may be any Unicode text
up to 64 KiB (with huge digit runs), every clock may be early, late, missing or absurd.

`FUZZ_POLICY_YAML` names one field of every field type, so each kind of value meets each
normalizer; `FUZZ` is the settings the properties run under: a small example budget by
default (`make test`), a large one with CLAIMWATCH_FUZZ=1 (`make fuzz`; CLAIMWATCH_FUZZ_EXAMPLES
sets its size, 3,000 by default).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson
from claimwatch.core.claim import fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.policy.loading import parse_policy
from claimwatch.wire.codec import MAX_CLAIM_BYTES
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------------------- settings

#: The environment variable that selects the large example budget (`make fuzz`).
FUZZ_ENV: Final = "CLAIMWATCH_FUZZ"
#: `make test`: the same 40 examples of each property in every run, so a red CI run is
#: one anyone can repeat; `make fuzz` draws new ones, thousands of them.
settings.register_profile(
    "claimwatch-fuzz-small",
    max_examples=40,
    derandomize=True,
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "claimwatch-fuzz-large",
    max_examples=int(os.environ.get("CLAIMWATCH_FUZZ_EXAMPLES", "3000")),
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
#: The settings of every fuzz property (a decorator); the profile is not loaded globally,
#: so the other properties of the suite keep their own settings.
FUZZ: Final = settings(
    settings.get_profile(
        "claimwatch-fuzz-large" if os.environ.get(FUZZ_ENV) else "claimwatch-fuzz-small"
    )
)

# ---------------------------------------------------------------------------- the policy

#: Field name -> (policy entry, a value that keeps the field's contract).
FIELD_TYPES: Final[dict[str, tuple[str, Any]]] = {
    "status": (
        "{type: enum, values: [paid, unpaid, overdue], freshness: 60s, owner: ledger}",
        "paid",
    ),
    "name": (
        "{type: string, case: fold, whitespace: collapse, freshness: until_edited, "
        "on_conflict: prefer_recent}",
        "Ada Lovelace",
    ),
    "note": ("{type: text, freshness: 24h}", "The invoice was paid on time."),
    "flag": ("{type: bool, freshness: 30s, settle: 0s}", True),
    "count": ("{type: integer, on_conflict: prefer_primary, owner: ledger}", 12),
    "score": (
        "{type: number, tolerance: {abs: 0.01}, on_conflict: present_with_timestamp}",
        0.5,
    ),
    "price": (
        "{type: money, currency: USD, freshness: 90s, settle: 500ms}",
        {"amount": 1250, "currency": "USD"},
    ),
    "weight": ("{type: quantity, unit: kg, nullable: true}", {"value": 3.5, "unit": "kg"}),
    "seen_at": ("{type: timestamp, max_delay: 3s}", "2026-09-14T08:00:00Z"),
    "blob": ("{type: json}", {"a": [1, 2.5, None]}),
}
#: A field the policy does not name (decided under the defaults, or rejected).
UNKNOWN_FIELD: Final = "paymentStatus"
FIELDS: Final = (*FIELD_TYPES, UNKNOWN_FIELD)
#: Registered sources of every class, one with a region, and one the registry lacks.
SOURCES: Final = ("ledger", "ledger@eu", "replica", "index", "user", "billing_api")


def fuzz_policy_yaml(version: str = "fuzz-1") -> str:
    """A policy naming one field of every type (docs/reference/policy.md), with varied windows."""
    fields = "\n".join(f"  {name}: {entry}" for name, (entry, _) in FIELD_TYPES.items())
    return (
        f"policy_version: {version}\n"
        "defaults: {freshness: 5m, settle: 2s, max_delay: 10s, clock_skew: 5s, grace: 30s,"
        " max_lineages: 4}\n"
        "sources:\n"
        "  ledger: {authority: system_of_record, lineage: ledger}\n"
        "  replica: {authority: cached, lineage: ledger}\n"
        "  index: {authority: derived, lineage: index}\n"
        "  user: {authority: asserted}\n"
        f"fields:\n{fields}\n"
    )


FUZZ_POLICY_YAML: Final = fuzz_policy_yaml()


def fuzz_policy() -> CompiledPolicy:
    """`FUZZ_POLICY_YAML`, compiled (a new object: its caches start empty)."""
    return CompiledPolicy(parse_policy(FUZZ_POLICY_YAML, "fuzz-policy.yaml"))


# ---------------------------------------------------------------------------- strings

#: Text a number parser or a unit parser may choke on, repeated to any length.
_DIGIT_RUNS: Final = (
    "1,",
    "9",
    "0",
    "1.",
    "12,345",
    "１",  # full-width (NFKC makes it an ASCII digit)
    "٣",  # Arabic-Indic
    "५",  # Devanagari
    "1e9",
    "-",
    "1 kg ",
    "½",
    "²",
    "Ⅻ",
)


@st.composite
def huge_runs(draw: st.DrawFn, max_bytes: int = MAX_CLAIM_BYTES) -> str:
    """A long repetition (up to about `max_bytes` bytes of UTF-8) inside a short sentence."""
    unit = draw(st.sampled_from(_DIGIT_RUNS) | st.text(min_size=1, max_size=4))
    times = draw(st.integers(1, max(1, max_bytes // len(unit.encode("utf-8", "surrogatepass")))))
    head = draw(st.sampled_from(("total ", "", "the balance was ", "not ", "+")))
    tail = draw(st.sampled_from(("", " USD", " kg", " items", "%", ".")))
    return head + unit * times + tail


#: Every Unicode category, surrogates (Cs) included: they are not Unicode text.
any_characters: Final = st.characters(codec=None)


def any_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Any string: every category, or a huge run of digits and separators."""
    return st.one_of(
        st.text(any_characters, max_size=max_size),
        st.text(st.characters(codec="utf-8"), max_size=max_size),
        huge_runs(),
        st.sampled_from(("", " ", "\u0000", "\ufeff", "paid", "PAID", "１２", "NaN", "null")),
    )


#: Sentences in the passage comparator's reach (antonyms, negation, numbers, scripts).
PASSAGES: Final = (
    "The invoice was paid on time.",
    "The invoice was not paid on time.",
    "The invoice was unpaid on time.",
    "The shipment weighs 12 kg in total.",
    "The shipment weighs 14 kg in total.",
    "The shipment weighs １２ kg in total.",
    "Der Auftrag wurde nicht bezahlt.",
    "Der Auftrag wurde bezahlt.",
    "请求没有被批准。",
    "请求被批准了。",
    "total 1,000.50 USD were refunded",
)


def passages() -> st.SearchStrategy[str]:
    """A passage for a `text` field: a known sentence, one with a huge number, or any text."""
    return st.one_of(
        st.sampled_from(PASSAGES),
        st.tuples(st.sampled_from(PASSAGES), huge_runs()).map(" ".join),
        any_text(200),
    )


# ---------------------------------------------------------------------------- JSON values


def numbers() -> st.SearchStrategy[Any]:
    """Integers of any size, floats of any kind (NaN and infinities too), digit strings."""
    return st.one_of(
        st.integers(),
        st.integers(-(2**70), 2**70),
        st.sampled_from((2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 0, -0)),
        st.integers(4_290, 4_400).map(lambda digits: 10**digits),  # beyond int()'s 4,300
        st.floats(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.from_regex(r"-?[0-9]{1,40}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,5})?", fullmatch=True),
        huge_runs(8_000),
    )


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON value (with Python's extras: NaN, huge integers, lone surrogates)."""
    scalars = st.one_of(st.none(), st.booleans(), numbers(), any_text())
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text(8), inner, max_size=4),
        max_leaves=max_leaves,
    )


def nested(depth: int) -> Any:
    """An array nested `depth` levels deep."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _money() -> st.SearchStrategy[Any]:
    currencies = st.sampled_from(("USD", "usd", "EUR", "JPY", "BHD", "XXX", "", "US D"))
    return st.one_of(
        st.fixed_dictionaries(
            {"amount": numbers(), "currency": currencies},
            optional={"minor_units": st.one_of(st.booleans(), json_values(2))},
        ),
        st.fixed_dictionaries({"amount": json_values(3), "currency": json_values(2)}),
        json_values(4),
    )


_UNITS: Final = (
    "kg",
    "g",
    "lb",
    "%",
    "percent",
    "degC",
    "delta_degC",
    "dBm",
    "m",
    "kg**99999",
    "kg/0",
    "1e999 kg",
    "2 kg",
    "kg kg kg",
    "(((kg",
    "__class__",
    "_",
    "",
    " ",
    "µg",
    "ｋｇ",
)


def _quantity() -> st.SearchStrategy[Any]:
    units = st.one_of(st.sampled_from(_UNITS), any_text(20), json_values(2))
    return st.one_of(
        st.fixed_dictionaries({"value": numbers(), "unit": units}),
        st.fixed_dictionaries({"value": json_values(3), "unit": units}),
        json_values(4),
    )


def _timestamps() -> st.SearchStrategy[Any]:
    return st.one_of(observed_texts(), json_values(3))


#: Per field type, the values a claim of that field may carry: mostly near the contract.
def values_for(field: str) -> st.SearchStrategy[Any]:
    """Values for a claim of `field`: valid ones, near misses, and any JSON at all."""
    entry = FIELD_TYPES.get(field)
    anything = json_values()
    if entry is None:
        return anything
    valid = entry[1]
    specific: st.SearchStrategy[Any] = {
        "status": st.sampled_from(("paid", "unpaid", "overdue", " Paid ", "PAID", "pending")),
        "name": any_text(80),
        "note": passages(),
        "flag": st.sampled_from((True, False, "true", 0, 1)),
        "count": numbers(),
        "score": numbers(),
        "price": _money(),
        "weight": _quantity(),
        "seen_at": _timestamps(),
        "blob": anything,
    }[field]
    return st.one_of(st.just(valid), specific, specific, anything)


# ---------------------------------------------------------------------------- clocks

#: The moment generated streams start at (the unit tests' clock).
T0_US: Final = parse_rfc3339("2026-09-14T09:12:30Z")
_ZONES: Final = ("Z", "+00:00", "+02:00", "-05:30", "+23:59", "-23:59", "z")


@st.composite
def rfc3339_near(draw: st.DrawFn, base_us: int, spread_s: int = 600) -> str:
    """An RFC 3339 text of a moment within `spread_s` seconds of `base_us`, in any offset."""
    at = base_us + draw(st.integers(-spread_s * 1_000_000, spread_s * 1_000_000))
    text = format_rfc3339(at)
    zone = draw(st.sampled_from(_ZONES))
    if zone in ("Z", "z"):
        return text[:-1] + zone
    sign = 1 if zone[0] == "+" else -1
    shift = sign * (int(zone[1:3]) * 60 + int(zone[4:6]))
    moment = datetime.fromisoformat(text).astimezone(UTC) + timedelta(minutes=shift)
    return moment.replace(tzinfo=None).isoformat() + zone


def observed_texts() -> st.SearchStrategy[Any]:
    """`observed_at` values: near T0, at the calendar's ends, garbage, any JSON."""
    return st.one_of(
        rfc3339_near(T0_US),
        rfc3339_near(T0_US, 10),
        rfc3339_near(T0_US, 10),
        st.sampled_from(
            (
                "0001-01-01T00:00:00Z",
                "0001-01-01T00:00:00+23:59",
                "9999-12-31T23:59:59-23:59",
                "9998-12-31T23:59:59.999999Z",
                "2016-12-31T23:59:60Z",
                "2026-09-14T09:12:30",
                "2026-09-14 09:12:30Z",
                "2026-02-30T00:00:00Z",
                "1970-01-01T00:00:00Z",
                "",
            )
        ),
        any_text(70),
        json_values(2),
    )


# ---------------------------------------------------------------------------- envelopes

_STATUSES: Final = ("ok", "ok", "ok", "not_found", "forbidden", "unavailable", "error")
#: `decide` modes (a claim asking for a decision on arrival, or saying it waits).
_DECIDE: Final = ("on_arrival", "on_arrival", "window")
_OPTIONAL: Final = ("lineage", "authority", "contract_version", "agent_id", "trace_id", "tool")


def _mostly(draw: st.DrawFn, good: st.SearchStrategy[Any], odds: int) -> Any:
    """A value of `good`, or once in `odds` draws any JSON at all (shrinks towards `good`)."""
    if draw(st.integers(0, odds - 1)) < odds - 1:
        return draw(good)
    return draw(json_values(3))


@st.composite
def envelopes(
    draw: st.DrawFn,
    *,
    claim_id: str | None = None,
    subject: str | None = None,
    field: str | None = None,
    observed: st.SearchStrategy[Any] | None = None,
    odds: int = 8,
) -> dict[str, Any]:
    """A claim envelope as any producer might send it: mostly well formed, never trusted.

    Each key is well formed but for one draw in about `odds` (then any JSON at all), so
    most claims reach resolution and every key is sometimes broken; `observed` draws
    `observed_at` (missing when it draws None).
    """
    plain_ids = st.text("abcxyz0123-/", min_size=1, max_size=12)
    body: dict[str, Any] = {
        "claim_id": claim_id if claim_id is not None else _mostly(draw, plain_ids, odds),
        "subject": subject if subject is not None else _mostly(draw, plain_ids, odds),
        "field": field if field is not None else _mostly(draw, st.sampled_from(FIELDS), odds),
        "source": _mostly(draw, st.sampled_from(SOURCES), odds),
    }
    stamp = draw(observed if observed is not None else observed_texts())
    if stamp is not None:
        body["observed_at"] = stamp
    body["status"] = _mostly(draw, st.sampled_from(_STATUSES), odds)
    if body["status"] == "ok" or draw(st.integers(0, 3)) == 3:
        name = body["field"] if isinstance(body["field"], str) else ""
        body["value"] = draw(values_for(name))
    for key in draw(st.lists(st.sampled_from(_OPTIONAL), max_size=2, unique=True)):
        body[key] = _mostly(draw, plain_ids, odds)
    if draw(st.integers(0, 3)) == 3:
        body["confidence"] = _mostly(draw, st.floats(0, 1), odds)
    if draw(st.integers(0, 2)) == 2:
        body["decide"] = _mostly(draw, st.sampled_from(_DECIDE), odds)
    if draw(st.integers(0, odds - 1)) == odds - 1:
        body[draw(any_text(10))] = draw(json_values(3))
    return body


def envelope_bytes(envelope: Mapping[str, Any]) -> bytes | None:
    """The JSON bytes of an envelope, or None when JSON has no form for it (NaN, 2**64, ...)."""
    try:
        return orjson.dumps(envelope)
    except (orjson.JSONEncodeError, TypeError):
        return None


# ---------------------------------------------------------------------------- record streams


@dataclass(frozen=True, slots=True)
class Tick:
    """A tick record at `at_us` (its broker time is `stamp_us`)."""

    at_us: int
    stamp_us: int


@dataclass(frozen=True, slots=True)
class Sent:
    """A claim record: the envelope, its bytes (None for raw junk) and its broker time."""

    envelope: dict[str, Any] | None
    value: bytes | None
    stamp_us: int | None


StreamItem = Tick | Sent


@st.composite
def streams(draw: st.DrawFn, max_claims: int = 24) -> list[StreamItem]:
    """A stream of claims and ticks for a few facts: out of order, late, stale, duplicated.

    Claims are observed around a clock that moves by random steps (forwards and, for late
    arrivals, backwards); some reuse an earlier claim id with the same or other content,
    some have no time; ticks come now and then, some forged ahead of their broker time.
    Broker times (`stamp_us`) move forwards only, as LogAppendTime does, or are absent.
    """
    subjects = draw(st.lists(st.sampled_from(("inv:1", "inv:2", "acct:7")), min_size=1, max_size=2))
    fields = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True))
    clock = T0_US
    stamp = T0_US + 1_000_000
    stamped = draw(st.booleans())
    items: list[StreamItem] = []
    sent: list[dict[str, Any]] = []
    for n in range(draw(st.integers(1, max_claims))):
        step = draw(st.sampled_from((0, 0, 1, 100, 300, 1_500, 2_500, 11_000, 61_000, 400_000)))
        clock += step * 1_000
        stamp = max(stamp, clock + 1_000_000)
        if draw(st.integers(0, 5)) == 0:
            forged = draw(st.sampled_from((0, 5_000_000, 3_600_000_000, -10_000_000)))
            items.append(Tick(clock + forged, stamp))
            continue
        if sent and draw(st.integers(0, 5)) == 0:
            again = dict(draw(st.sampled_from(sent)))
            if draw(st.booleans()):
                again["value"] = draw(values_for(str(again.get("field"))))
            items.append(_sent(again, stamp if stamped else None))
            continue
        age = draw(st.sampled_from((0, 0, 0, 1, 3, 8, 45, 59, 61, 89, 91, 400, -3, -6, -90)))
        observed = st.one_of(
            st.just(format_rfc3339(clock - age * 1_000_000)),
            st.just(format_rfc3339(clock - age * 1_000_000)),
            st.just(format_rfc3339(clock - age * 1_000_000)),
            st.just(None),
            observed_texts(),
        )
        body = draw(
            envelopes(
                claim_id=f"c{n}",
                subject=draw(st.sampled_from(subjects)),
                field=draw(st.sampled_from(fields)),
                observed=observed,
            )
        )
        sent.append(body)
        items.append(_sent(body, stamp if stamped else None))
    if draw(st.integers(0, 7)) == 0:
        junk = draw(st.sampled_from((b"", b"null", b"[1]", b"{", b'{"claim_id": 1}', b"\xff")))
        items.insert(draw(st.integers(0, len(items))), Sent(None, junk, None))
    return items


def _sent(body: dict[str, Any], stamp_us: int | None) -> Sent:
    return Sent(body, envelope_bytes(body), stamp_us)


def record_key(envelope: Mapping[str, Any] | None) -> bytes | None:
    """The Kafka key a well-behaved producer gives a claim (None when it names no fact)."""
    if envelope is None:
        return None
    subject, field = envelope.get("subject"), envelope.get("field")
    if isinstance(subject, str) and isinstance(field, str):
        try:
            return fact_key(subject, field).encode()
        except UnicodeEncodeError:
            return None
    return None


# ---------------------------------------------------------------------------- seeded streams


@dataclass(frozen=True, slots=True)
class Planned:
    """A claim of a seeded stream: sent `delay_s` into the run, observed `age_s` before then.

    `observed_at` is stamped when it is sent (None: it is sent without one). `raw` marks a
    claim sent as is (a conflicting duplicate, a broken value): the agent-side publisher
    would refuse it.
    """

    delay_s: float
    age_s: float | None
    claim: dict[str, Any]


#: The differential's fields and how each is valued (a few field types, short budgets).
DIFF_FIELDS: Final = ("status", "flag", "count", "score", "price", "note")


def random_stream(seed: int, claims: int, span_s: float, facts: int = 160) -> list[Planned]:
    """A seeded stream of about `claims` claims over `span_s` seconds for `facts` facts.

    Out of order (observed up to a minute before sending), late and stale (beyond the
    freshness budget, and beyond freshness plus grace), duplicated (the same id and
    content, or the same id with other content), missing times, broken values, several
    field types and sources, a third asking for a decision on arrival; every claim id is
    unique unless it repeats on purpose.
    """
    rng = random.Random(seed)
    keys = [(f"inv:{seed}-{n:03d}", DIFF_FIELDS[n % len(DIFF_FIELDS)]) for n in range(facts)]
    out: list[Planned] = []
    for n in range(claims):
        delay = rng.uniform(0.0, span_s)
        subject, field = rng.choice(keys)
        roll = rng.random()
        age: float | None
        if roll < 0.55:
            age = rng.uniform(0.0, 1.5)  # on time, slightly out of order
        elif roll < 0.70:
            age = rng.uniform(1.5, 20.0)  # late
        elif roll < 0.80:
            age = rng.uniform(20.0, 120.0)  # beyond freshness, some beyond grace
        elif roll < 0.85:
            age = None  # no time at all
        elif roll < 0.90:
            age = -rng.uniform(0.0, 30.0)  # ahead of the clock
        else:
            age = rng.uniform(0.0, 1.0)
        value = _diff_value(rng, field)
        body = {
            "claim_id": f"d{seed}-{n:05d}",
            "subject": subject,
            "field": field,
            "source": rng.choice(SOURCES),
            "status": rng.choice(_STATUSES),
        }
        if body["status"] == "ok":
            body["value"] = value
        if n % 3 == 1:  # (no draw: the stream is the same but for the key)
            body["decide"] = "window" if n % 12 == 4 else "on_arrival"
        out.append(Planned(delay, age, body))
    # duplicates of earlier claims: the same content, or the same id with other content
    for n in range(claims // 20):
        original = rng.choice(out)
        copy = dict(original.claim)
        if n % 2:
            copy["value"] = _diff_value(rng, str(copy["field"]))
            copy["status"] = "ok"
        later = min(span_s, original.delay_s + rng.uniform(0.0, 3.0))
        out.append(Planned(later, original.age_s, copy))
    return sorted(out, key=lambda p: p.delay_s)


def _diff_value(rng: random.Random, field: str) -> Any:
    if rng.random() < 0.04:
        return rng.choice(("bogus", {"amount": "x"}, [1], None, -1.5))
    return {
        "status": lambda: rng.choice(("paid", "unpaid", "overdue")),
        "flag": lambda: rng.random() < 0.7,
        "count": lambda: rng.choice((1, 2, 3, 2**70)),
        "score": lambda: round(rng.uniform(0, 1), 3),
        "price": lambda: {"amount": rng.choice((1250, 1300)), "currency": "USD"},
        "note": lambda: rng.choice(PASSAGES[:6]),
    }[field]()


def stamp(planned: Planned, sent_at: datetime) -> dict[str, Any]:
    """The claim of `planned` as sent at `sent_at`: observed `age_s` before (or without time)."""
    claim = dict(planned.claim)
    if planned.age_s is not None:
        moment = sent_at - timedelta(seconds=planned.age_s)
        claim["observed_at"] = moment.astimezone(UTC).isoformat(timespec="microseconds")
    return claim
