"""The worker's event loop: uvloop unless told otherwise (`--loop`, `CLAIMWATCH_LOOP`).

uvloop runs the same asyncio programs on libuv, and the worker spends less CPU a claim
on it (`CLAIMWATCH_BENCH=loop make bench`; figures: docs/performance.md). `asyncio`
keeps Python's own loop; a platform without uvloop (Windows) falls back to it with a
warning.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

log = logging.getLogger(__name__)

#: The loops `--loop` accepts.
LOOPS: Final = ("uvloop", "asyncio")
#: The loop the worker runs on unless told otherwise.
DEFAULT_LOOP: Final = "uvloop"


def install_loop(name: str) -> str:
    """Make `name` the event loop of the loops made from now on; the one it will be.

    Call it before the worker makes its loop (and before any `asyncio.run`).
    """
    if name not in LOOPS:
        raise ValueError(f"unknown event loop {name!r}: choose one of {', '.join(LOOPS)}")
    policy = _uvloop_policy() if name == "uvloop" else None
    asyncio.set_event_loop_policy(policy)  # None: Python's own
    return "asyncio" if policy is None else "uvloop"


def _uvloop_policy() -> asyncio.AbstractEventLoopPolicy | None:
    """Uvloop's loop policy, or None (with a warning) where uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        log.warning("uvloop is not installed on this platform: the worker runs on asyncio")
        return None
    policy: asyncio.AbstractEventLoopPolicy = uvloop.EventLoopPolicy()
    return policy


def running_loop() -> str:
    """The name of the event loop running this coroutine's thread (`uvloop` or `asyncio`)."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.startswith("uvloop") else "asyncio"
