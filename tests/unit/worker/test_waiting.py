"""Waiting requests are woken by the first decision that covers their claims, and only then.

They are bounded in all and per fact, and a refused claim answers its waiters at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from claimwatch.core.covering import covers
from claimwatch.worker.claims.waiting import REASON_CHARS, Crowded, Refused, Waiters
from hypothesis import given, settings
from hypothesis import strategies as st

KEY = b"invoice:INV-1|payment_status"


def _decision(*ids: str) -> dict[str, Any]:
    return {"decision_id": "dec_" + "".join(ids), "claims": [{"claim_id": i} for i in ids]}


async def test_a_covering_decision_wakes_the_waiter_with_it() -> None:
    """The waiter gets the decision that lists all its claims, not the earlier partial one."""
    waiters = Waiters(100, 10)
    waiting = asyncio.ensure_future(waiters.wait(KEY, ("c1", "c2"), 5.0))
    await asyncio.sleep(0)
    waiters.offer(KEY, _decision("c1"))
    waiters.offer(b"other|fact", _decision("c1", "c2"))
    await asyncio.sleep(0)
    assert not waiting.done()
    waiters.offer(KEY, _decision("c0", "c1", "c2"))
    assert _decision("c0", "c1", "c2") == await waiting
    assert 0 == len(waiters)


async def test_no_covering_decision_within_the_wait_answers_none_and_forgets_the_waiter() -> None:
    """A wait that runs out returns None and leaves nothing registered."""
    waiters = Waiters(100, 10)
    waiters_seen = []
    waiting = asyncio.ensure_future(waiters.wait(KEY, ("c9",), 0.05))
    await asyncio.sleep(0)
    waiters_seen.append(len(waiters))
    waiters.offer(KEY, _decision("c1"))
    assert None is await waiting
    assert [1] == waiters_seen
    assert not waiters


async def test_waiting_for_no_ids_takes_the_next_decision() -> None:
    """Without claim ids, the next decision of the fact is the answer."""
    waiters = Waiters(100, 10)
    first = asyncio.ensure_future(waiters.wait(KEY, (), 5.0))
    second = asyncio.ensure_future(waiters.wait(KEY, ("c2",), 5.0))
    await asyncio.sleep(0)
    assert 2 == len(waiters)
    waiters.offer(KEY, _decision("c1"))
    assert _decision("c1") == await first
    waiters.offer(KEY, _decision("c1", "c2"))
    assert _decision("c1", "c2") == await second
    assert 0 == len(waiters)


async def test_a_cancelled_request_leaves_no_waiter_behind() -> None:
    """A client that goes away (its handler cancelled) is forgotten."""
    waiters = Waiters(100, 10)
    waiting = asyncio.ensure_future(waiters.wait(KEY, ("c1",), 5.0))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert 0 == len(waiters)
    waiters.offer(KEY, _decision("c1"))  # nobody to answer: no error


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _registered(waiters: Waiters, *calls: tuple[bytes, tuple[str, ...]]) -> list[Any]:
    tasks = [asyncio.ensure_future(waiters.wait(key, ids, 5.0)) for key, ids in calls]
    await asyncio.sleep(0)
    return tasks


@pytest.mark.parametrize(
    ("most", "per_fact", "calls", "message"),
    [
        (2, 10, [(KEY, ("c1",)), (b"b|f", ("c2",))], "2 requests wait on this worker (at most 2)"),
        (
            10,
            2,
            [(KEY, ("c1",)), (KEY, ("c2",))],
            f"2 requests wait for {KEY.decode()} (at most 2 per fact)",
        ),
    ],
)
async def test_one_waiter_past_a_bound_is_turned_away_and_the_rest_keep_waiting(
    most: int, per_fact: int, calls: list[tuple[bytes, tuple[str, ...]]], message: str
) -> None:
    """Past the worker's or the fact's bound: Crowded naming it; a freed place is taken again."""
    waiters = Waiters(most, per_fact)
    tasks = await _registered(waiters, *calls)
    with pytest.raises(Crowded) as crowded:
        await waiters.wait(KEY, ("c9",), 5.0)
    assert message == str(crowded.value)
    assert 1 == crowded.value.retry_after_s
    assert len(calls) == len(waiters)
    tasks[0].cancel()
    await asyncio.gather(tasks[0], return_exceptions=True)
    (again,) = await _registered(waiters, (KEY, ("c3",)))
    waiters.offer(KEY, _decision("c3"))
    assert _decision("c3") == await again
    for task in tasks[1:]:
        task.cancel()


async def test_a_refused_claim_answers_its_waiters_at_once_and_the_others_keep_waiting() -> None:
    """The waiters listing the refused id get the reason; one on another id does not."""
    waiters = Waiters(100, 10)
    both, alone, other = await _registered(
        waiters, (KEY, ("c1", "c2")), (KEY, ("c2",)), (KEY, ("c3",))
    )
    waiters.refuse(KEY, "c2", "bad signature: no signature")
    expected = Refused("c2", "bad signature: no signature")
    assert [expected, expected] == [await both, await alone]
    assert not other.done()
    waiters.offer(KEY, _decision("c3"))
    assert _decision("c3") == await other
    assert 0 == len(waiters)


async def test_a_refusal_is_remembered_for_a_while_and_bounded() -> None:
    """A request arriving after the refusal is answered with it, until it is forgotten."""
    clock = Clock()
    waiters = Waiters(100, 10, remember_s=60.0, remember_most=2, clock=clock)
    waiters.refuse(KEY, "c1", "x" * (REASON_CHARS + 50))
    refused = await waiters.wait(KEY, ("c0", "c1"), 5.0)
    assert Refused("c1", "x" * REASON_CHARS) == refused
    assert Refused("c1", "x" * REASON_CHARS) == waiters.refusal(KEY, ("c1",))
    assert None is waiters.refusal(b"other|fact", ("c1",))  # per fact
    clock.now = 61.0
    assert None is waiters.refusal(KEY, ("c1",))
    for n in range(3):  # the oldest past the bound is forgotten first
        waiters.refuse(KEY, f"d{n}", "dup")
    assert [None, Refused("d1", "dup"), Refused("d2", "dup")] == [
        waiters.refusal(KEY, (f"d{n}",)) for n in range(3)
    ]


@settings(max_examples=200, deadline=None)
@given(
    waiting=st.lists(st.lists(st.sampled_from("abcdef"), max_size=3, unique=True), max_size=8),
    offered=st.lists(st.sets(st.sampled_from("abcdef")), max_size=6),
)
def test_every_waiter_is_answered_by_the_first_decision_that_covers_it(
    waiting: list[list[str]], offered: list[set[str]]
) -> None:
    """The filed index answers exactly the waiters a scan of `covers` would, with that decision."""

    async def run() -> tuple[list[Any], list[Any]]:
        waiters = Waiters(100, 100)
        tasks = await _registered(waiters, *((KEY, tuple(ids)) for ids in waiting))
        expected: list[Any] = [None] * len(waiting)
        for listed in offered:
            decision = _decision(*sorted(listed))
            for n, ids in enumerate(waiting):
                if expected[n] is None and covers(decision, ids):
                    expected[n] = decision
            waiters.offer(KEY, decision)
        for _ in range(3):  # the answered requests return (wait_for's own task, then theirs)
            await asyncio.sleep(0)
        answered = [t.result() if t.done() else None for t in tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert 0 == len(waiters)
        return expected, answered

    expected, answered = asyncio.run(run())
    assert expected == answered
