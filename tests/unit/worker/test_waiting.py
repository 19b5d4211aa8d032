"""Waiting requests are woken by the first decision that covers their claims, and only then."""

from __future__ import annotations

import asyncio
from typing import Any

from streams.worker.claims.waiting import Waiters

KEY = b"invoice:INV-1|payment_status"


def _decision(*ids: str) -> dict[str, Any]:
    return {"decision_id": "dec_" + "".join(ids), "claims": [{"claim_id": i} for i in ids]}


async def test_a_covering_decision_wakes_the_waiter_with_it() -> None:
    """The waiter gets the decision that lists all its claims, not the earlier partial one."""
    waiters = Waiters()
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
    waiters = Waiters()
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
    waiters = Waiters()
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
    waiters = Waiters()
    waiting = asyncio.ensure_future(waiters.wait(KEY, ("c1",), 5.0))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert 0 == len(waiters)
    waiters.offer(KEY, _decision("c1"))  # nobody to answer: no error
