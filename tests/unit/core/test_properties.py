"""Hypothesis properties of resolution: order, staleness, precedence, idempotency, decision ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from claimwatch.core.claim import Claim, claim_from_envelope
from claimwatch.core.contract import check
from claimwatch.core.resolve import resolve, resolve_entries
from claimwatch.core.timeutil import format_rfc3339, parse_rfc3339
from claimwatch.models.durations import US_PER_S
from claimwatch.models.policy import RANK, Authority
from claimwatch.policy.loading import load_policy
from claimwatch.wire.codec import dumps
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from tests.support.claims import claim
from tests.support.paths import REPO

POLICY = load_policy(REPO / "examples" / "policy.yaml")
NOW_US = parse_rfc3339("2026-09-14T09:12:30Z")
SUBJECT = "invoice:INV-1"
#: payment_status and balance both have a 60s freshness budget in the example policy.
FRESHNESS_S = 60

SOURCES = [
    "billing-api",
    "billing-api@us-east-1",
    "ledger-replica",
    "ledger-replica@eu-west-1",
    "reporting-replica",
    "reporting-replica@eu-west-1",
    "scorer",
    "user",
    "user@mobile",
    "crm",
    "crm@eu-west-1",
]
# "ok" is listed several times so most claims carry a value.
STATUSES = ["ok", "ok", "ok", "ok", "not_found", "forbidden", "unavailable", "error"]
LINEAGES = [None, None, None, None, "ledger", "reporting", "elsewhere"]
VALID_VALUES: dict[str, list[Any]] = {
    "payment_status": ["paid", "unpaid", "overdue", "refunded", " paid "],
    "balance": [
        {"amount": 1250, "currency": "USD", "minor_units": True},
        {"amount": "12.50", "currency": "USD"},
        {"amount": 12.5, "currency": "USD"},
        {"amount": 0, "currency": "USD", "minor_units": True},
        {"amount": "19.99", "currency": "USD"},
    ],
}
INVALID_VALUES: dict[str, list[Any]] = {
    "payment_status": ["pending", 3],
    "balance": [1250, {"amount": "12.50", "currency": "EUR"}],
}
FIELDS = sorted(VALID_VALUES)
#: Offsets from NOW in seconds: a coarse grid so that ties in time are common, with the
#: freshness boundary (-60 fresh, -61 stale) and the clock-skew boundary (5 ok, 6 rejected).
OFFSETS = [-150, -90, -61, -60, -45, -30, -30, -20, -10, -10, -10, 0, 0, 0, 5, 6]
ZONES = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _observed_at(offset_s: int, zone: timezone) -> str:
    moment = datetime.fromtimestamp(NOW_US / US_PER_S, UTC) + timedelta(seconds=offset_s)
    return moment.astimezone(zone).isoformat()


def _rank_of(field: str, source: str) -> int:
    return POLICY.source_view(field, source).rank


@st.composite
def envelopes(
    draw: st.DrawFn,
    field: str,
    *,
    sources: tuple[str, ...] = tuple(SOURCES),
    offsets: st.SearchStrategy[int] | None = None,
    valid_only: bool = False,
) -> dict[str, Any]:
    """One claim envelope (without claim_id) for `field` around NOW."""
    status = draw(st.sampled_from(["ok", "ok", "not_found"] if valid_only else STATUSES))
    envelope: dict[str, Any] = {
        "subject": SUBJECT,
        "field": field,
        "source": draw(st.sampled_from(sources)),
        "observed_at": _observed_at(
            draw(offsets if offsets is not None else st.sampled_from(OFFSETS)),
            draw(st.sampled_from(ZONES)),
        ),
        "status": status,
    }
    if status == "ok":
        pool = (
            VALID_VALUES[field] if valid_only else VALID_VALUES[field] * 3 + INVALID_VALUES[field]
        )
        envelope["value"] = draw(st.sampled_from(pool))
    lineage = draw(st.sampled_from(LINEAGES))
    if lineage is not None:
        envelope["lineage"] = lineage
    return envelope


def _claims(specs: list[dict[str, Any]], prefix: str = "c") -> list[Claim]:
    """The claims of drawn envelopes, numbered `prefix-00`, `prefix-01`, ... in order."""
    return [claim(f"{prefix}-{i:02d}", **spec) for i, spec in enumerate(specs)]


@st.composite
def facts(draw: st.DrawFn, max_size: int = 7) -> tuple[str, list[Claim]]:
    """A field and the claims of one fact about it, with distinct claim ids."""
    field = draw(st.sampled_from(FIELDS))
    # a few observation times per fact, so that claims often tie in time
    times = draw(st.lists(st.sampled_from(OFFSETS), min_size=1, max_size=3))
    specs = draw(
        st.lists(envelopes(field, offsets=st.sampled_from(times)), min_size=1, max_size=max_size)
    )
    return field, _claims(specs)


def _decide(claims: list[Claim], now_us: int = NOW_US) -> dict[str, Any]:
    return resolve(claims, POLICY, now_us)


def _pairs(record: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((c["claim_id"], c["disposition"]) for c in record["claims"])


def _verdict(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["outcome"], record["value"], record["canonical"], record["action"])


def _winner(record: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in record["claims"] if c["disposition"] == "won")


@PROPERTY
@given(fact=facts(), data=st.data())
def test_arrival_order_never_changes_the_decision(
    fact: tuple[str, list[Claim]], data: st.DataObject
) -> None:
    """Any permutation of the same claims gives a byte-identical record, ids included."""
    _, claims = fact
    expected = dumps(_decide(claims))
    assert expected == dumps(_decide(claims[::-1]))
    assert expected == dumps(_decide(data.draw(st.permutations(claims))))


@PROPERTY
@given(fact=facts(), data=st.data())
def test_adding_a_stale_claim_never_changes_the_outcome(
    fact: tuple[str, list[Claim]], data: st.DataObject
) -> None:
    """A claim older than the freshness budget leaves outcome, value, canonical and action alone."""
    field, claims = fact
    before = _decide(claims)
    # docs/concepts.md#decide: only a fact whose every claim is rejected is `rejected`; any claim
    # not rejected (a stale one included) makes such a fact `insufficient` instead.
    assume("rejected" != before["outcome"])
    stale_offsets = st.integers(-6 * 3600, -FRESHNESS_S - 1)
    spec = data.draw(envelopes(field, offsets=stale_offsets, valid_only=True))
    position = data.draw(st.integers(0, len(claims)))
    extra = _claims([spec], prefix="stale")[0]
    after = _decide([*claims[:position], extra, *claims[position:]])
    assert (
        "stale"
        == next(c for c in after["claims"] if c["claim_id"] == extra.claim_id)["disposition"]
    )
    assert _verdict(before) == _verdict(after)
    assert (before["exists"], before["conflict_kind"]) == (after["exists"], after["conflict_kind"])


@PROPERTY
@given(fact=facts(), data=st.data())
def test_adding_a_lower_class_claim_never_changes_a_resolved_value(
    fact: tuple[str, list[Claim]], data: st.DataObject
) -> None:
    """A claim weaker than the winner's class, in any lineage and of any age, changes nothing."""
    field, claims = fact
    before = _decide(claims)
    assume("resolved" == before["outcome"])
    winner = _winner(before)
    winner_rank = RANK[Authority(winner["authority"])]
    weaker = [s for s in SOURCES if _rank_of(field, s) < winner_rank]
    assume(weaker)
    winner_offset = (parse_rfc3339(winner["observed_at"]) - NOW_US) // US_PER_S
    newer = st.integers(int(winner_offset), 10)
    spec = data.draw(
        st.one_of(
            envelopes(field, sources=tuple(weaker)),
            # the hard case: same lineage as the winner, newer, possibly disagreeing
            envelopes(field, sources=tuple(weaker), offsets=newer, valid_only=True).map(
                lambda e: {**e, "lineage": winner["lineage"]}
            ),
        )
    )
    position = data.draw(st.integers(0, len(claims)))
    extra = _claims([spec], prefix="weak")[0]
    after = _decide([*claims[:position], extra, *claims[position:]])
    note(f"added {spec}")
    assert _verdict(before) == _verdict(after)
    assert winner["claim_id"] == _winner(after)["claim_id"]
    assert before["exists"] == after["exists"]


def test_a_newer_cache_never_displaces_its_owner() -> None:
    """ledger-replica (cached, lineage ledger) newer than billing-api does not change the value."""
    owner = {
        "subject": SUBJECT,
        "field": "balance",
        "source": "billing-api",
        "observed_at": _observed_at(-30, UTC),
        "status": "ok",
        "value": {"amount": 0, "currency": "USD", "minor_units": True},
    }
    cache = {
        **owner,
        "source": "ledger-replica",
        "observed_at": _observed_at(-5, UTC),
        "value": {"amount": "12.50", "currency": "USD"},
    }
    before = _decide(_claims([owner]))
    after = _decide(_claims([owner, cache]))
    assert ("resolved", {"minor": 0, "currency": "USD"}) == (before["outcome"], before["canonical"])
    assert _verdict(before) == _verdict(after)
    by_id = {c["claim_id"]: c for c in after["claims"]}
    assert ("won", "ledger") == (by_id["c-00"]["disposition"], by_id["c-00"]["lineage"])
    assert ("outranked", "ledger") == (by_id["c-01"]["disposition"], by_id["c-01"]["lineage"])
    assert (True, False) == (by_id["c-01"]["dissent"], by_id["c-01"]["temporal"])


@PROPERTY
@given(fact=facts(), data=st.data())
def test_duplicate_claim_id_changes_nothing(
    fact: tuple[str, list[Claim]], data: st.DataObject
) -> None:
    """Re-sending a claim (same claim_id, same content) anywhere gives a byte-identical record."""
    _, claims = fact
    copies = data.draw(st.lists(st.sampled_from(claims), min_size=1, max_size=3))
    redelivered = list(claims)
    for original in copies:
        copy = claim_from_envelope(dict(original.envelope))
        redelivered.insert(data.draw(st.integers(0, len(redelivered))), copy)
    assert dumps(_decide(claims)) == dumps(_decide(redelivered))


@PROPERTY
@given(fact=facts(), later_s=st.integers(0, 2 * 3600))
def test_decision_id_is_stable(fact: tuple[str, list[Claim]], later_s: int) -> None:
    """Same claims, same id; at another `now` the id differs exactly when a disposition does."""
    _, claims = fact
    first = _decide(claims)
    rebuilt = [claim_from_envelope(dict(c.envelope)) for c in claims]
    assert first["decision_id"] == _decide(rebuilt)["decision_id"]
    moved = _decide(claims, NOW_US + later_s * US_PER_S)
    same_dispositions = _pairs(first) == _pairs(moved)
    assert same_dispositions == (first["decision_id"] == moved["decision_id"])
    if later_s > FRESHNESS_S + 150 and first["outcome"] in ("resolved", "conflict"):
        # every claim that voted has gone stale by then
        assert "insufficient" == moved["outcome"]
        assert first["decision_id"] != moved["decision_id"]


def test_decision_id_changes_when_the_claims_go_stale() -> None:
    """A resolved fact that turns insufficient as its claims age gets a new decision id."""
    specs = [
        {
            "subject": SUBJECT,
            "field": "payment_status",
            "source": "billing-api",
            "observed_at": _observed_at(-10, UTC),
            "status": "ok",
            "value": "paid",
        }
    ]
    fresh = _decide(_claims(specs))
    stale = _decide(_claims(specs), NOW_US + FRESHNESS_S * US_PER_S)
    assert ("resolved", "insufficient") == (fresh["outcome"], stale["outcome"])
    assert fresh["decision_id"] != stale["decision_id"]
    assert fresh["decision_id"].startswith("dec_")


@PROPERTY
@given(fact=facts(), offsets=st.lists(st.sampled_from(OFFSETS), min_size=1, max_size=4))
def test_a_claims_memo_never_changes_a_decision(
    fact: tuple[str, list[Claim]], offsets: list[int]
) -> None:
    """The same live claims decided at several clock times with their memo, as without it."""
    _field, claims = fact
    for offset in offsets:
        now_us = NOW_US + offset * US_PER_S
        expected, _ = resolve_entries(claims, POLICY, now_us)
        actual, _ = resolve_entries(claims, POLICY, now_us, memo=True)
        assert expected == actual


@PROPERTY
@given(fact=facts())
def test_claims_known_distinct_are_decided_as_any_claims(fact: tuple[str, list[Claim]]) -> None:
    """Claims whose ids are known to differ (a fact state's) decide as when looked over."""
    _field, claims = fact
    expected, _ = resolve_entries(claims, POLICY, NOW_US)
    actual, _ = resolve_entries(claims, POLICY, NOW_US, distinct=True)
    assert expected == actual


def test_a_memoized_claim_is_still_judged_on_the_clock() -> None:
    """A claim checked once is in the future again at an earlier clock: its memo skips no test."""
    later = NOW_US + 10 * US_PER_S
    ahead = claim("c-1", "billing-api", "paid", observed_at=format_rfc3339(later))
    rule = POLICY.rule("payment_status")
    first = check(ahead, rule, later, memo=True)
    again = check(ahead, rule, NOW_US, memo=True)
    assert (None, "observed 10s in the future (allowed skew 5s)") == (first.error, again.error)
    assert ahead.memo is not None and first is ahead.memo.verdict


def test_a_memoized_claim_record_follows_its_sources_authority(tmp_path: Path) -> None:
    """A claim's kept record part is made again under a policy ranking its source otherwise."""
    text = (REPO / "examples" / "policy.yaml").read_text()
    demoted = tmp_path / "policy.yaml"
    demoted.write_text(
        text.replace(
            "billing-api:       {authority: system_of_record, lineage: ledger}",
            "billing-api:       {authority: cached, lineage: billing}",
        )
    )
    other = load_policy(demoted)
    live = [claim("c-1", "billing-api", "paid"), claim("c-2", "ledger-replica", "unpaid")]
    resolve_entries(live, POLICY, NOW_US, memo=True)  # the memo is made under POLICY
    expected, _ = resolve_entries(
        [claim("c-1", "billing-api", "paid"), claim("c-2", "ledger-replica", "unpaid")],
        other,
        NOW_US,
    )
    actual, _ = resolve_entries(live, other, NOW_US, memo=True)
    assert expected == actual
    assert ["cached", "billing"] == [
        expected["claims"][0]["authority"],
        expected["claims"][0]["lineage"],
    ]
