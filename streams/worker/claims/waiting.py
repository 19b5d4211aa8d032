"""Requests waiting for a fact's decision that covers given claims: woken by the decision.

A `GET /facts/...?covering=...&wait=...` on the worker that owns the fact registers here;
the claims agent offers each decision it makes (after sending it), and a waiter whose
claim ids it covers is answered with it at once. Nothing polls: a waiter sleeps on its
future until a decision covers it or its time is up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from streams.core.covering import covers

Decision = Mapping[str, Any]


class Waiters:
    """The waiting requests of this worker, per fact key."""

    def __init__(self) -> None:
        self._by_key: dict[bytes, list[tuple[tuple[str, ...], asyncio.Future[Decision]]]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def __len__(self) -> int:
        return sum(len(waiting) for waiting in self._by_key.values())

    async def wait(self, key: bytes, ids: tuple[str, ...], seconds: float) -> Decision | None:
        """The first decision of fact `key` made from now on that covers `ids`.

        Every decision covers no ids. None when no such decision came within `seconds`.
        """
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        entry = (ids, future)
        self._by_key.setdefault(key, []).append(entry)
        try:
            return await asyncio.wait_for(future, seconds)
        except TimeoutError:
            return None
        finally:
            waiting = self._by_key.get(key)
            if waiting is not None:
                waiting.remove(entry)
                if not waiting:
                    del self._by_key[key]

    def offer(self, key: bytes, decision: Decision) -> None:
        """A decision of fact `key` was made and sent: answer the waiters it covers."""
        for ids, future in self._by_key.get(key, ()):
            if not future.done() and covers(decision, ids):
                future.set_result(decision)
