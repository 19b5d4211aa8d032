"""Bad input at its root: numbers beyond their type, wrong envelope types, tombstones, depth."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import orjson
import pytest
from claimwatch.core.claim import EnvelopeError, claim_from_envelope
from claimwatch.core.limits import INT64_MAX, INT64_MIN, MAX_NESTING, describe_int, scan
from claimwatch.core.normalize import NormalizationError, canonical
from claimwatch.core.policy import MAX_CACHED, CompiledPolicy
from claimwatch.core.resolve import resolve
from claimwatch.core.signing import verify
from claimwatch.core.state import FactState
from claimwatch.core.timeutil import format_rfc3339
from claimwatch.models.policy import FieldPolicy
from claimwatch.policy.loading import parse_policy
from claimwatch.wire.codec import DecodeError, decode_claim, dumps
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.claims import envelope
from tests.support.feed import feed, hostile_policy, hostile_runtime
from tests.support.hostile import LATENESS_US, T0, HostileMessage, hostile_policy_yaml

USD = '"currency": "USD"'


#: a claim of the corpus policy, observed at T0 (`field=` and `value=` for the others)
corpus_claim = partial(
    envelope,
    claim_id="c1",
    source="ledger",
    value="paid",
    subject="invoice:1",
    field="status",
    observed_at=format_rfc3339(T0),
)


def handle(raw: bytes, field: str = "status") -> tuple[str | None, list[str], str | None]:
    """(outcome, DLQ reasons, decision reason) of one record through a fresh runtime."""
    key = f"invoice:1|{field}".encode()
    message = HostileMessage("case", key, raw, timestamp_us=T0 + LATENESS_US)
    (outcome,) = feed(hostile_runtime(), [message])
    assert None is outcome.error
    decision = outcome.decisions[-1] if outcome.decisions else None
    return (
        decision["outcome"] if decision else None,
        outcome.dead_letters,
        decision["reason"] if decision else None,
    )


BEYOND = [
    ("integer 1e30 literal", "count", "1" + "0" * 30, "integer limit (signed 64-bit, |x| < 2**63)"),
    ("integer 2**64-1", "count", "18446744073709551615", "signed 64-bit, |x| < 2**63"),
    ("integer 2**63", "count", "9223372036854775808", "signed 64-bit, |x| < 2**63"),
    ("integer -2**63-1", "count", "-9223372036854775809", "integer limit"),
    ("integer string 1e300", "count", '"1e300"', "integer limit"),
    ("integer 1e308", "count", "1e308", "integer limit"),
    ("money string 1e300", "price", '{"amount": "1e300", ' + USD + "}", "money limit"),
    ("money 1e308", "price", '{"amount": 1e308, ' + USD + "}", "money limit"),
    (
        "money minor 1e30",
        "price",
        '{"amount": 1' + "0" * 30 + ', "minor_units": true, ' + USD + "}",
        "money limit",
    ),
    (
        "money minor 2**63",
        "price",
        '{"amount": 9223372036854775808, "minor_units": true, ' + USD + "}",
        "signed 64-bit",
    ),
    (
        "money major x100 overflow",
        "price",
        '{"amount": 92233720368547759, ' + USD + "}",
        "at most 9223372036854775807 USD minor units",
    ),
    ("number string 1e400", "score", '"1e400"', "finite"),
    ("number 2**64-1", "score", "18446744073709551615", "signed 64-bit"),
    ("quantity 1e308 t", "weight", '{"value": 1e308, "unit": "t"}', "out of range"),
    ("json 2**64-1", "blob", '{"n": [18446744073709551615]}', "signed 64-bit"),
]


@pytest.mark.parametrize(
    ("field", "value", "limit"), [c[1:] for c in BEYOND], ids=[c[0] for c in BEYOND]
)
def test_numbers_beyond_their_field_type_are_rejected_naming_the_limit(
    field: str, value: str, limit: str
) -> None:
    """Decided `rejected` with the limit in the reason and copied to the DLQ; nothing raises."""
    raw = json.dumps(corpus_claim(field=field, value="@@")).replace('"@@"', value).encode()
    outcome, dead, reason = handle(raw, field)
    assert ("rejected", True, True) == (outcome, limit in (reason or ""), limit in dead[0])


def test_numbers_at_the_limits_are_accepted() -> None:
    """Signed 64-bit integers and money minor units are taken up to and including the bounds."""
    policy = hostile_policy()
    count = policy.rule("count").normalizer
    price = policy.rule("price").normalizer
    assert (INT64_MAX, INT64_MIN) == (count.canon(INT64_MAX), count.canon(INT64_MIN))
    assert (INT64_MAX, "USD") == price.canon(
        {"amount": INT64_MAX, "currency": "USD", "minor_units": True}
    )
    assert (9223372036854775800, "USD") == price.canon(
        {"amount": 92233720368547758, "currency": "USD"}
    )


WRONG_TYPES = [
    ("status", ["ok"], "`status` must be one of"),
    ("status", {"ok": 1}, "`status` must be one of"),
    ("lineage", ["x"], "`lineage` must be a string"),
    ("authority", 1, "`authority` must be a string"),
    ("contract_version", 2, "`contract_version` must be a string"),
    ("agent_id", {"a": 1}, "`agent_id` must be a string"),
    ("tool", ["t"], "`tool` must be a string"),
    ("trace_id", 1.5, "`trace_id` must be a string"),
    ("signature", 12, "`signature` must be a string"),
    ("confidence", "high", "`confidence` must be a number from 0 to 1"),
    ("confidence", -0.1, "`confidence` must be a number from 0 to 1"),
    ("confidence", True, "`confidence` must be a number from 0 to 1"),
    ("observed_at", 1789377120, "`observed_at`"),
    ("observed_at", ["2026-09-14T09:00:00Z"], "`observed_at`"),
]


@pytest.mark.parametrize(
    ("key", "value", "reason"), WRONG_TYPES, ids=[f"{k}={v!r}" for k, v, _ in WRONG_TYPES]
)
def test_wrongly_typed_envelope_keys_reject_the_claim(key: str, value: Any, reason: str) -> None:
    """A claim that names its fact but breaks the envelope's types is decided `rejected`."""
    outcome, dead, why = handle(orjson.dumps(corpus_claim(**{key: value})))
    assert ("rejected", True, True) == (outcome, reason in (why or ""), reason in dead[0])


NO_FACT = [
    (b"[1, 2]", "a claim must be a JSON object, got an array"),
    (b"42", "got a number"),
    (b'"claim"', "got a string"),
    (b"null", "got null"),
    (orjson.dumps(corpus_claim(claim_id=7)), "`claim_id` must be a non-empty string, got number 7"),
    (orjson.dumps(corpus_claim(subject=["s"])), "`subject` must be a non-empty string"),
    (orjson.dumps(corpus_claim(field={"f": 1})), "`field` must be a non-empty string"),
    (orjson.dumps(corpus_claim(source=False)), "`source` must be a non-empty string"),
    (
        orjson.dumps({k: v for k, v in corpus_claim().items() if k != "source"}),
        "missing required key `source`",
    ),
    (orjson.dumps(corpus_claim(subject="a\x00b")), "control character U+0000"),
    (orjson.dumps(corpus_claim(field="a|b")), "`field` contains `|`"),
    (b'{"value": ' + b"[" * 100 + b"]" * 100 + b"}", f"nested deeper than {MAX_NESTING} levels"),
    (b"", "empty value"),
    (b"  \n", "empty value"),
]


@pytest.mark.parametrize(("raw", "reason"), NO_FACT, ids=[r for _, r in NO_FACT])
def test_messages_that_name_no_fact_are_decode_errors(raw: bytes, reason: str) -> None:
    """DecodeError with the reason: the worker sends them to the DLQ only."""
    with pytest.raises(DecodeError) as caught:
        decode_claim(raw)
    assert True is (reason in str(caught.value)), str(caught.value)
    assert (None, True) == (handle(raw)[0], reason in handle(raw)[1][0])


def test_a_tombstone_is_a_decode_error_named_tombstone() -> None:
    """decode_claim(None) raises DecodeError whose reason starts with `tombstone`."""
    with pytest.raises(DecodeError) as caught:
        decode_claim(None)
    assert "tombstone" == str(caught.value).split(":")[0]


TIMES = [
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59Z",
    "0000-01-01T00:00:00Z",
    "2026-09-14T09:00:00",
    "x" * 10_000,
]


@pytest.mark.parametrize("observed_at", TIMES, ids=[t[:30] for t in TIMES])
def test_observation_times_outside_the_calendar_reject_the_claim(observed_at: str) -> None:
    """No OverflowError later when a record renders the time: the claim is rejected."""
    claim = claim_from_envelope(corpus_claim(observed_at=observed_at))
    assert (None, True) == (
        claim.observed_us,
        claim.time_error is not None and len(claim.time_error) < 200,
    )
    assert "rejected" == handle(orjson.dumps(corpus_claim(observed_at=observed_at)))[0]


def test_deep_values_are_refused_without_recursion() -> None:
    """Values nested far deeper than the stack allows raise the library's own errors."""
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(NormalizationError):
        canonical(FieldPolicy(type="json"), deep)
    with pytest.raises(EnvelopeError):
        claim_from_envelope(corpus_claim(value=deep))
    assert True is isinstance(
        verify({**corpus_claim(value=deep), "signature": "0" * 64}, b"k"), str
    )
    assert f"nested deeper than {MAX_NESTING} levels" == scan({"v": deep}).refused


def test_records_of_claims_built_in_python_always_encode() -> None:
    """A claim built in process with a 10**30 or a NaN is rejected, and its record encodes."""
    policy = hostile_policy()
    claims = [
        claim_from_envelope(corpus_claim(claim_id="nan", field="blob", value=float("nan"))),
        claim_from_envelope(corpus_claim(claim_id="big", field="blob", value={"n": 10**30})),
        claim_from_envelope(corpus_claim(claim_id="x", field="blob", value=1, x_extra=-(10**5000))),
    ]
    record = resolve(claims, policy, T0)
    shown = {
        c["claim_id"]: (c["disposition"], c.get("value"), c.get("x_extra"))
        for c in record["claims"]
    }
    assert {
        "nan": ("rejected", "nan", None),
        "big": ("rejected", {"n": "1" + "0" * 30}, None),
        "x": ("rejected", 1, "-<an integer of about 5001 digits>"),
    } == shown
    assert record == orjson.loads(dumps(record))


def test_huge_integers_are_described_without_converting_all_their_digits() -> None:
    """No ValueError from Python's 4300-digit limit when a reason names a huge integer."""
    assert "<an integer of about 5001 digits>" == describe_int(10**5000)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(st.characters(exclude_categories=()), max_size=20),  # lone surrogates too
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(
    [
        "claim_id",
        "subject",
        "field",
        "source",
        "observed_at",
        "status",
        "value",
        "lineage",
        "authority",
        "confidence",
        "contract_version",
        "agent_id",
        "tool",
        "trace_id",
        "signature",
        "extra",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(
        ["status", "count", "score", "price", "weight", "seen_at", "blob", "name", "note", "flag"]
    ),
    key=KEYS,
    value=JSON_VALUES,
)
def test_any_json_in_any_envelope_key_is_decided_or_dead_lettered(
    field: str, key: str, value: Any
) -> None:
    """Whatever a producer puts in any key: no exception, and a decision or a DLQ record."""
    body = corpus_claim(field=field, value="x")
    body[key] = value
    raw = json.dumps(body).encode()  # Python writes NaN, Infinity and integers of any size
    outcome, dead, _ = handle(raw, field)
    assert True is (outcome is not None or bool(dead))
    try:
        claim = claim_from_envelope(body)
    except EnvelopeError:
        return
    dumps(
        resolve([claim], hostile_policy(), T0)
    )  # the record of any claim built in process encodes


def test_stored_claims_that_todays_checks_refuse_are_restored_as_rejected() -> None:
    """State written by an older version (a NUL in a source) restores; the claim is rejected."""
    stored = {
        "s": "invoice:1",
        "f": "status",
        "p": 0,
        "c": [{"i": "old", "s": "led\x00ger", "t": T0, "v": "paid"}],
    }
    state = FactState.from_obj(orjson.loads(orjson.dumps(stored)))
    record = resolve(state.claims, hostile_policy(), T0)
    (claim,) = record["claims"]
    assert ("rejected", "rejected", True) == (
        record["outcome"],
        claim["disposition"],
        claim["error"].startswith(
            "no longer a valid claim: `source` contains the control character"
        ),
    )
    assert record == orjson.loads(dumps(record))


def test_unknown_fields_and_sources_never_grow_the_policy_caches_without_bound() -> None:
    """Producers choose field names and sources: the compiled policy caches stay bounded."""
    policy = CompiledPolicy(parse_policy(hostile_policy_yaml(), "<hostile>"))
    for n in range(MAX_CACHED + 10):
        policy.rule(f"field-{n}")
        policy.source_view("status", f"source-{n}")
    assert (True, True) == (len(policy._rules) <= MAX_CACHED, len(policy._views) <= MAX_CACHED)
    assert ("json", "derived") == (
        policy.rule("field-0").spec.type.value,
        policy.source_view("status", "source-0").authority.value,
    )
