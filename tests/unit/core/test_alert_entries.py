"""A decision's detector entry is the same whether made from the resolution or the record."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.core.alerts.entry import entry_of
from claimwatch.core.alerts.lag_state import FactTrack
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.processor import PartitionProcessor
from claimwatch.core.state import FactState
from claimwatch.core.timeutil import format_rfc3339
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.alerts import REPLICA
from tests.support.claims import claim
from tests.support.clocks import SECOND, T0

SOURCES = ["billing-api", REPLICA, "cache", "user"]
ANSWERS = st.tuples(
    st.integers(min_value=0, max_value=2),  # the fact
    st.sampled_from(SOURCES),
    st.sampled_from(["paid", "unpaid", "overdue", "not-a-status", None]),  # None: not_found
    st.sampled_from(["ok", "ok", "ok", "unavailable"]),
    st.integers(min_value=0, max_value=90),  # seconds after T0
    st.booleans(),  # a leap-second-free time with or without a fraction
)


def _claims(answers: list[tuple[Any, ...]]) -> list[Any]:
    made = []
    for n, (fact, source, value, status, second, fraction) in enumerate(answers):
        at = T0 + second * SECOND + (250_000 if fraction else 0)
        extra: dict[str, Any] = {"observed_at": format_rfc3339(at)}
        if value is None:
            extra["status"] = "not_found"
        else:
            extra["status"] = status
        made.append(claim(f"c{n}", source, value, subject=f"invoice:{fact}", **extra))
    return made


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.parametrize("memo", [False, True], ids=["replay", "live claims with memos"])
@given(st.lists(ANSWERS, min_size=1, max_size=40))
def test_entries_from_the_resolution_equal_entries_from_the_record(
    policy: CompiledPolicy, memo: bool, answers: list[tuple[Any, ...]]
) -> None:
    """The processor's entries (from its resolution, memos or not) equal the record's."""
    facts: dict[str, FactState] = {}
    step = PartitionProcessor(policy, 0, facts, alerts=True, memo=memo)
    made = []
    for one in _claims(answers):
        made += step.on_claim(one).decisions
    made += step.on_tick(T0 + 3600 * SECOND).decisions
    tracks: dict[str, FactTrack | None] = {}
    again = []
    for decided in made:
        record = decided.record
        key = f"{record['subject']}|{record['field']}"
        at = decided.alert[0] if decided.alert is not None else 0
        tracks[key], entry = entry_of(policy, tracks.get(key), record, decided.previous_outcome, at)
        again.append(entry)
    assert again == [d.alert for d in made]
    assert {k: t.pack() for k, t in tracks.items() if t is not None} == {
        k: s.track.pack() for k, s in facts.items() if s.track is not None
    }
