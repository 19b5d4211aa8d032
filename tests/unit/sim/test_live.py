"""`simulate --live`: the scenario laid onto the wall clock, truth printed as it happens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.sim.live import Event, run_live, run_suffix, schedule, truth_line

START = "2026-09-14T06:00:00Z"
WALL = parse_rfc3339("2026-12-05T11:00:00Z")
TRUTH = {
    "start": START,
    "incidents": [
        {
            "kind": "conflict_spike",
            "field": "payment_status",
            "start": "2026-09-14T06:00:10Z",
            "end": "2026-09-14T06:00:20Z",
        }
    ],
}


def _claim(cid: str, at: str) -> dict[str, Any]:
    return {"claim_id": cid, "subject": "invoice:1", "field": "payment_status", "observed_at": at}


CLAIMS = [
    _claim("a", "2026-09-14T06:00:00Z"),
    _claim("b", "2026-09-14T06:00:00.010Z"),
    _claim("c", "2026-09-14T06:00:12Z"),
    _claim("d", "2026-09-14T06:00:30Z"),
]


@pytest.mark.parametrize(
    ("start_us", "expected"),
    [(0, "-r0"), (35 * 1_000_000, "-rz"), (36 * 1_000_000 + 999_999, "-r10")],
)
def test_a_run_suffix_is_its_start_second_in_base_36(start_us: int, expected: str) -> None:
    """Two runs a second apart give their claims different ids."""
    assert expected == run_suffix(start_us)


def test_claims_and_incident_edges_are_laid_onto_the_wall_clock_at_speed() -> None:
    """At speed 2, 06:00:12 of the scenario is 6 s after the run's start; ids get the suffix."""
    events = list(schedule(CLAIMS, TRUTH, WALL, speed=2.0))
    suffix = run_suffix(WALL)
    laid = [
        (e.at_us - WALL, [(c["claim_id"], c["observed_at"]) for c in e.claims], e.truth)
        for e in events
    ]
    assert [
        (
            0,
            [
                (f"a{suffix}", "2026-12-05T11:00:00Z"),
                (f"b{suffix}", "2026-12-05T11:00:00.005Z"),
            ],
            None,
        ),
        (
            5_000_000,
            [],
            {
                "event": "incident starts",
                "kind": "conflict_spike",
                "field": "payment_status",
                "at": "2026-12-05T11:00:05Z",
                "start": "2026-12-05T11:00:05Z",
                "end": "2026-12-05T11:00:10Z",
            },
        ),
        (6_000_000, [(f"c{suffix}", "2026-12-05T11:00:06Z")], None),
        (
            10_000_000,
            [],
            {
                "event": "incident ends",
                "kind": "conflict_spike",
                "field": "payment_status",
                "at": "2026-12-05T11:00:10Z",
                "start": "2026-12-05T11:00:05Z",
                "end": "2026-12-05T11:00:10Z",
            },
        ),
        (15_000_000, [(f"d{suffix}", "2026-12-05T11:00:15Z")], None),
    ] == laid


def test_the_given_claims_are_left_as_they_were() -> None:
    """The live copies are new dicts: the scenario's claims keep their ids and times."""
    list(schedule(CLAIMS, TRUTH, WALL, speed=1.0))
    assert ("a", "2026-09-14T06:00:00Z") == (CLAIMS[0]["claim_id"], CLAIMS[0]["observed_at"])


@pytest.mark.parametrize("speed", [0.0, -1.0])
def test_a_speed_that_stops_or_reverses_time_is_refused(speed: float) -> None:
    """Speed must be positive."""
    with pytest.raises(ValueError, match="speed must be positive"):
        list(schedule(CLAIMS, TRUTH, WALL, speed))


@pytest.mark.parametrize(
    ("as_json", "expected"),
    [
        (
            False,
            "truth 2026-12-05T11:00:05Z: conflict_spike payment_status starts"
            " (until 2026-12-05T11:00:10Z)",
        ),
        (
            True,
            '{"at": "2026-12-05T11:00:05Z", "end": "2026-12-05T11:00:10Z", "event": '
            '"incident starts", "field": "payment_status", "kind": "conflict_spike", '
            '"start": "2026-12-05T11:00:05Z"}',
        ),
    ],
)
def test_truth_lines_read_as_a_sentence_or_json(as_json: bool, expected: str) -> None:
    """A truth event prints as one line either way."""
    event = next(e for e in schedule(CLAIMS, TRUTH, WALL, 2.0) if e.truth is not None)
    assert event.truth is not None
    assert expected == truth_line(event.truth, as_json)


async def test_a_run_sends_each_batch_and_prints_each_truth_in_order() -> None:
    """Events already due are sent at once, in order; the count of claims sent is returned."""
    sent: list[list[str]] = []

    async def send(batch: Sequence[dict[str, Any]]) -> None:
        sent.append([c["claim_id"] for c in batch])

    said: list[str] = []
    events = [
        Event(1, (_claim("a", START),)),
        Event(2, truth={"event": "incident ends", "kind": "replica_lag", "source": "r", "at": "x"}),
        Event(3, (_claim("b", START), _claim("c", START))),
    ]
    count = await run_live(iter(events), send, said.append, clock=lambda: 10)
    assert (3, [["a"], ["b", "c"]]) == (count, sent)
    assert ["truth x: replica_lag r ends"] == said
