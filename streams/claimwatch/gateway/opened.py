"""A client the gateway opens on first use and keeps until it stops.

The arbitrator's claimwatch client, the verdict publisher, the document client and a
trust check's fact pages are each entered once, on the first call that needs them, under
a lock (calls arrive at once). An entry that fails is not kept: the next call tries
again, so a broker or worker that comes up later is found.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

T = TypeVar("T", bound=AbstractAsyncContextManager[Any])


class OpenedOnUse(Generic[T]):
    """One `T` made by `make` and entered on first use; `close` exits it."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._opened: T | None = None
        self._lock = asyncio.Lock()

    @property
    def current(self) -> T | None:
        """The open one, or None when none is open."""
        return self._opened

    async def get(self) -> T:
        async with self._lock:
            if self._opened is None:
                made = self._make()
                await made.__aenter__()  # raises: not kept, the next use enters again
                self._opened = made
            return self._opened

    async def close(self) -> None:
        async with self._lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            await opened.__aexit__(None, None, None)
