"""The in-flight bound: a sender waits once too many records are unacknowledged."""

from __future__ import annotations

import asyncio

from claimwatch.worker.backpressure import InFlight


async def test_admit_returns_at_once_below_the_limit() -> None:
    """Up to `limit` pending records never make the sender wait."""
    window = InFlight(limit=3)
    loop = asyncio.get_running_loop()
    for _ in range(3):
        await window.admit(loop.create_future())
    assert (0, 3) == (window.waits, len(window))


async def test_admit_waits_until_half_the_window_is_acknowledged() -> None:
    """The fifth record of a 4-window waits until only 2 remain in flight."""
    window = InFlight(limit=4)
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(5)]
    for future in futures[:4]:
        await window.admit(future)
    fifth = asyncio.create_task(window.admit(futures[4]))
    await asyncio.sleep(0)
    assert not fifth.done()
    futures[0].set_result(None)
    futures[1].set_result(None)
    await asyncio.sleep(0)
    assert not fifth.done()
    futures[2].set_result(None)
    await asyncio.wait_for(fifth, 1)
    assert (1, 2) == (window.waits, len(window))


async def test_failed_acknowledgements_are_counted_not_raised() -> None:
    """A record the broker refused is logged and counted; the sender goes on."""
    window = InFlight(limit=1)
    loop = asyncio.get_running_loop()
    failed = loop.create_future()
    await window.admit(failed)
    failed.set_exception(RuntimeError("refused"))
    await window.admit(loop.create_future())
    await asyncio.sleep(0)
    assert 1 == window.failures
