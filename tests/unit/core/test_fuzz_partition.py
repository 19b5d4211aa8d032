"""Generated streams through the partition step as the worker runs it (Runtime over a table).

Claims and ticks in any order and on any clock (out of order, late, stale, duplicated with
the same and other content, without a time, ticks forged ahead) go through
`Runtime.handle` over a dict table (the worker's edge: decode, route, step, stored state),
then the end of input closes every open window. Nothing raises; every claim is decided
(its id listed in a decision of its fact) or, when it is no claim at all, dead-lettered
with a reason; a replay (objects, no arrival checks) decides as the live step did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, get_args

import pytest
from claimwatch.core.claim import fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.state import FactState
from claimwatch.models.decision import Disposition
from claimwatch.wire.codec import DecodeError, decode_claim, dumps, loads
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.claims.edge import ClaimsHandled, Runtime
from claimwatch.worker.claims.facts import MemoryFacts
from claimwatch.worker.ticks import TICK_KEY, tick_value
from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.generators import (
    FUZZ,
    T0_US,
    Sent,
    StreamItem,
    Tick,
    envelope_bytes,
    envelopes,
    fuzz_policy,
    record_key,
    streams,
)

POLICY = fuzz_policy()
NAMES: Final = TopicNames("fz.")
PARTITIONS: Final = 2
S: Final = 1_000_000
#: A price that keeps the `price` field's contract.
USD: Final = {"amount": 1250, "currency": "USD"}
DISPOSITIONS: Final = frozenset(get_args(Disposition))


@dataclass(slots=True)
class Run:
    """What a stream made: decisions in order, and the DLQ reasons by input record."""

    decisions: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    #: each claim record sent: (partition, offset, its bytes)
    placed: list[tuple[int, int, bytes]] = field(default_factory=list)

    def collect(self, handled: ClaimsHandled) -> None:
        self.decisions.extend(d.record for d in handled.decided)
        for send in handled.sends:
            if send.topic == NAMES.dlq:
                headers = dict(send.headers)
                origin = (int(headers["claimwatch.partition"]), int(headers["claimwatch.offset"]))
                reason = headers["claimwatch.reason"].decode()
                self.dead_letters.setdefault(origin, []).append(reason)

    def decided(self) -> set[tuple[str, str]]:
        """(fact key, claim id) of every claim some decision lists."""
        return {
            (fact_key(d["subject"], d["field"]), c["claim_id"])
            for d in self.decisions
            for c in d["claims"]
        }


def run(
    policy: CompiledPolicy,
    items: list[StreamItem],
    *,
    replay: bool = False,
    restart_at: int | None = None,
) -> Run:
    """Feed a stream to a Runtime (the worker's, or a replay's), then end the input."""

    def runtime() -> Runtime:
        if replay:
            return Runtime(
                policy, NAMES, PARTITIONS, {}, MemoryFacts(), alerts=False, judge_arrivals=False
            )
        return Runtime(policy, NAMES, PARTITIONS, table)

    table: dict[bytes, bytes] = {}
    current = runtime()
    out = Run()
    offsets = [0] * PARTITIONS
    for index, item in enumerate(items):
        if index == restart_at:
            current = runtime()  # a restart: the state comes back from the table alone
        if isinstance(item, Tick):
            for partition in range(PARTITIONS):
                value = tick_value(item.at_us)
                out.collect(
                    current.handle(partition, offsets[partition], TICK_KEY, value, item.stamp_us)
                )
                offsets[partition] += 1
            continue
        if item.value is None:
            continue  # JSON has no form for it: no producer can send it
        key = record_key(item.envelope)
        partition = partition_for(key, PARTITIONS) if key is not None else 0
        offset = offsets[partition]
        offsets[partition] += 1
        out.placed.append((partition, offset, item.value))
        out.collect(current.handle(partition, offset, key, item.value, item.stamp_us))
    for part in current.flush_in(1_000):
        out.collect(part)
    return out


def _claim_at(fact: str, claim_id: str, observed: Any, value: Any, **extra: Any) -> Sent:
    subject, field_name = fact.split("|")
    stamp_us = extra.pop("stamp_us", None)
    body: dict[str, Any] = {
        "claim_id": claim_id,
        "subject": subject,
        "field": field_name,
        "source": extra.pop("source", "ledger"),
    }
    if observed is not None:
        body["observed_at"] = observed
    body.update(status="ok", value=value, **extra)
    return Sent(body, dumps(body), stamp_us)


#: Explicit examples: the failures the generators found (and issue 40's own).
STALE_ON_ARRIVAL: Final = [
    _claim_at("inv:1|status", "fresh", "2026-09-14T09:12:30Z", "paid"),
    _claim_at("inv:1|status", "old", "2026-09-14T09:10:50Z", "unpaid"),  # 100 s, budget 60 s
]
ONLY_CLAIM_WITHOUT_TIME: Final = [_claim_at("inv:2|status", "untimed", None, "paid")]
HUGE_NUMBER_PASSAGES: Final = [
    _claim_at("inv:1|note", "a", "2026-09-14T09:12:30Z", "The invoice was paid on time."),
    _claim_at("inv:1|note", "b", "2026-09-14T09:12:30Z", "total " + "1," * 4400, source="user"),
    _claim_at("inv:2|status", "after", "2026-09-14T09:12:40Z", "paid"),
    _claim_at("inv:1|status", "after2", "2026-09-14T09:12:41Z", "paid"),
]

#: A claim superseded by a newer one of its source (a field kept until edited) before its
#: fact's window closed: it no longer votes, and the decision lists it `stale`.
SUPERSEDED_IN_ITS_WINDOW: Final = [
    _claim_at("inv:1|name", "a", "2026-09-14T09:12:30Z", "Ada"),
    _claim_at("inv:1|name", "b", "2026-09-14T09:12:31Z", "Bob"),
]
#: Five lineages in one window on a policy keeping four (`max_lineages`): the oldest
#: claim is out of the running before the fact is decided, and listed `stale`.
BEYOND_MAX_LINEAGES: Final = [
    _claim_at("inv:1|status", f"l{n}", f"2026-09-14T09:12:3{n}Z", "paid", lineage=f"lin{n}")
    for n in range(5)
]

#: A claim 89 s old on a field kept 90 s (60 s freshness, 30 s grace): accepted, then
#: past the horizon when its fact's window closes 2 s later, and listed `stale`.
PRUNED_AT_ITS_DEADLINE: Final = [
    _claim_at("inv:1|status", "now", "2026-09-14T09:12:30Z", "paid"),
    _claim_at("inv:1|status", "edge", "2026-09-14T09:11:01Z", "unpaid"),
]


#: Times sent as numbers, and a restart between them: read back from the table, the first
#: became a valid time (and won), the second made its fact fail to load (OverflowError).
NUMBER_TIMES: Final = [
    _claim_at("inv:1|status", "number", T0_US, "unpaid", stamp_us=T0_US + S),
    _claim_at("inv:1|status", "text", "2026-09-14T09:12:30Z", "paid", source="index"),
    _claim_at("inv:1|status", "huge", 10**18, "unpaid", stamp_us=T0_US + S),
    _claim_at("inv:1|status", "later", "2026-09-14T09:12:31Z", "paid", source="index"),
]

#: A fact's window open at a restart, on a partition no record reaches after it: the end
#: of the input closed only the partitions a record had reached, so it was never decided.
RESTARTED_UNTOUCHED: Final = [
    _claim_at("inv:2|price", "open", "2026-09-14T09:12:30Z", USD, stamp_us=T0_US),
    _claim_at("acct:7|price", "other", "2026-09-14T09:12:34Z", USD, stamp_us=T0_US + 4 * S),
]

#: A claim asking for a decision on arrival, then one in its window that changes the fact:
#: decided at once, then again when the window closes (live, replayed and restarted alike).
EARLY_THEN_LATER: Final = [
    _claim_at("inv:1|status", "early", "2026-09-14T09:12:30Z", "paid", decide="on_arrival"),
    _claim_at("inv:1|status", "later", "2026-09-14T09:12:31Z", "unpaid", source="index"),
]

#: Claims pruning takes out of the running before their fact's first decision: each is
#: still listed (`stale`) in that decision.
DROPPED_EXAMPLES: Final = (SUPERSEDED_IN_ITS_WINDOW, BEYOND_MAX_LINEAGES, PRUNED_AT_ITS_DEADLINE)
#: Streams every generated-stream test also starts from (each with no restart).
KNOWN_STREAMS: Final = (
    STALE_ON_ARRIVAL,
    ONLY_CLAIM_WITHOUT_TIME,
    HUGE_NUMBER_PASSAGES,
    [Tick(T0_US, T0_US + S), *ONLY_CLAIM_WITHOUT_TIME],
    EARLY_THEN_LATER,
)

StreamTest = Callable[[list[StreamItem], int | None], None]


def any_stream(
    *examples: tuple[Sequence[StreamItem], int | None],
) -> Callable[[StreamTest], StreamTest]:
    """Run a test on generated streams and restarts, first on the known streams, then `examples`."""

    def decorate(test: StreamTest) -> StreamTest:
        for items, restart in [*((known, None) for known in KNOWN_STREAMS), *examples]:
            test = example(items=items, restart=restart)(test)
        return FUZZ(given(items=streams(), restart=st.none() | st.integers(0, 30))(test))

    return decorate


@any_stream((SUPERSEDED_IN_ITS_WINDOW, 3), (NUMBER_TIMES, 1), (NUMBER_TIMES, 3))
def test_nothing_raises_in_the_partition_step(items: list[StreamItem], restart: int | None) -> None:
    """Any stream (a restart from the table included) is handled without raising.

    Nothing raises, not even inside a fact (no fact is set aside as `internal_error`); a
    record that is no claim goes to the DLQ with a reason; each claim a decision lists has
    a disposition, and a rejected one its reason.
    """
    out = run(POLICY, items, restart_at=restart)
    for partition, offset, value in out.placed:
        try:
            decode_claim(value)
        except DecodeError:
            assert [] != out.dead_letters.get((partition, offset), []), value[:200]
    assert all(r for reasons in out.dead_letters.values() for r in reasons)
    # a fact set aside (its deciding raised, confined to it) is a failure found all the same
    failed = [r for reasons in out.dead_letters.values() for r in reasons if "internal_error" in r]
    failed += [d["reason"] for d in out.decisions if "internal_error" in d["reason"]]
    assert [] == failed
    for decision in out.decisions:
        for listed in decision["claims"]:
            assert listed["disposition"] in DISPOSITIONS
            assert listed["disposition"] != "rejected" or listed["error"]


@any_stream(
    *((items, None) for items in DROPPED_EXAMPLES), (NUMBER_TIMES, 3), (RESTARTED_UNTOUCHED, 1)
)
def test_every_claim_is_decided_or_dead_lettered(
    items: list[StreamItem], restart: int | None
) -> None:
    """Every claim is listed in a decision of its fact; only a non-claim is DLQ-only."""
    assert [] == unanswered(run(POLICY, items, restart_at=restart))


@pytest.mark.parametrize("items", DROPPED_EXAMPLES, ids=["superseded", "lineages", "horizon"])
def test_a_dropped_claim_is_still_answered(items: list[StreamItem]) -> None:
    """The failures found, one by one: each claim is listed in a decision of its fact."""
    assert [] == unanswered(run(POLICY, items))


def test_a_window_open_at_a_restart_is_closed_at_the_end_of_the_input() -> None:
    """Found by the generators: its partition saw no record after the restart."""
    assert [] == unanswered(run(POLICY, RESTARTED_UNTOUCHED, restart_at=1))


@pytest.mark.parametrize(
    "items",
    [STALE_ON_ARRIVAL, ONLY_CLAIM_WITHOUT_TIME, HUGE_NUMBER_PASSAGES],
    ids=["stale-on-arrival", "only-claim-untimed", "huge-number-passage"],
)
def test_issue_40_claims_are_answered(items: list[StreamItem]) -> None:
    """Issue 40's own cases: a stale claim, an untimed only claim, a 4,400-digit passage."""
    assert [] == unanswered(run(POLICY, items))


def unanswered(out: Run) -> list[tuple[str, str, list[str]]]:
    """The claims no decision of their fact lists, with their DLQ reasons."""
    decided = out.decided()
    missing = []
    for partition, offset, value in out.placed:
        try:
            claim = decode_claim(value)
        except DecodeError:
            continue
        if (claim.fact_key, claim.claim_id) not in decided:
            reasons = out.dead_letters.get((partition, offset), ["not dead-lettered"])
            missing.append((claim.fact_key, claim.claim_id, reasons))
    return missing


@FUZZ
@given(items=streams())
@example(items=STALE_ON_ARRIVAL)
@example(items=ONLY_CLAIM_WITHOUT_TIME)
def test_a_replay_decides_as_the_live_step(items: list[StreamItem]) -> None:
    """The same records replayed (objects, no arrival checks) make the same decisions."""
    live = run(POLICY, items)
    replayed = run(POLICY, items, replay=True)
    assert _per_fact(live.decisions) == _per_fact(replayed.decisions)


def _per_fact(decisions: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in decisions:
        grouped.setdefault(fact_key(record["subject"], record["field"]), []).append(record)
    return grouped


@FUZZ
@given(bodies=st.lists(envelopes(subject="inv:1", field="status"), min_size=1, max_size=5))
@example(bodies=[{"claim_id": "a", "source": "ledger", "observed_at": T0_US, "value": "paid"}])
@example(bodies=[{"claim_id": "a", "source": "ledger", "observed_at": 10**18, "value": "paid"}])
@example(bodies=[{"claim_id": "a", "source": "ledger", "observed_at": 1.5, "value": "paid"}])
@example(bodies=[{"claim_id": "a", "source": "ledger", "observed_at": "2026-09-14T09:12:30Z"}])
@example(bodies=[{"claim_id": "a", "source": "ledger", "status": None, "value": "paid"}])
def test_a_stored_fact_comes_back_as_it_was(bodies: list[dict[str, Any]]) -> None:
    """A fact's claims read back from the table carry the envelopes they were sent with.

    A restart must not change what a claim says: a time sent as a number stays a number
    (rejected), never turned into a valid time by the stored form.
    """
    state = FactState("inv:1", "status", 0)
    for n, body in enumerate(bodies):
        raw = envelope_bytes({**body, "claim_id": f"c{n}", "subject": "inv:1", "field": "status"})
        if raw is None:
            continue
        try:
            state.claims.append(decode_claim(raw))
        except DecodeError:
            continue
    restored = FactState.from_obj(loads(dumps(state.to_obj())))
    assert [dict(c.envelope) for c in state.claims] == [dict(c.envelope) for c in restored.claims]
