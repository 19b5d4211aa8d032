"""Python's garbage collector set for claimwatch's processes: no full collection mid-run.

A worker's live state is many small containers that live long: fact states, their claims,
the envelopes. Python collects its oldest generation whenever a quarter of it has been
promoted since the last time, and that collection walks every tracked object, while it
finds nothing to free (the fact states hold no reference cycles). In the worker such a
pause stalls every partition at once, and sets the slowest claim-to-decision latencies
(figures: docs/performance.md).

So the worker freezes what exists once it is wired (modules, the app, the policy: all of
it lives as long as the process), leaves the two young generations to Python (they still
collect short-lived cycles as they come), and runs the full collection itself, every
`every_s` seconds, from a timer (`claimwatch.worker.timers.install_full_collection`).

A one-pass command (`claimwatch resolve`, `replay`) holds what it reads until its end, so
every full collection walks a growing heap for nothing: `one_pass` turns them off while
the command runs. The offline resolve and the replay of a file make no reference
cycles at all, so they run with no collection (`no_collection`); a replay of a topic reads
it through asyncio, whose futures and callbacks do make cycles, and keeps the young
collections (as does what a file replay does after deciding: sending to a topic).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator
from typing import Final

log = logging.getLogger(__name__)

#: The oldest generation's threshold that Python never reaches (a C int).
NEVER: Final = 2**31 - 1
#: A full collection longer than this is logged.
SLOW_S: Final = 1.0


def tune(every_s: float) -> bool:
    """Freeze the objects made so far and leave full collections to the timer.

    `every_s` <= 0 keeps Python's own policy (nothing changes). True when tuned.
    """
    if every_s <= 0:
        return False
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    return True


def collect_full() -> float:
    """One full collection now; its seconds (logged when slow)."""
    started = time.perf_counter()
    freed = gc.collect()
    took = time.perf_counter() - started
    if took > SLOW_S:
        log.warning("full garbage collection took %.2f s (%d objects freed)", took, freed)
    return took


@contextlib.contextmanager
def one_pass() -> Iterator[None]:
    """No full collection inside the block (the young generations still collect as usual).

    For a command that reads its input once and holds it: the oldest generation only
    grows meanwhile, and what it holds has no reference cycles to free. The thresholds
    are put back when the block ends; processes forked inside it keep its setting.
    """
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, oldest)


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """No garbage collection at all inside the block (reference counting frees as usual).

    For a command whose work makes no reference cycles, so that every collection finds
    nothing and only walks what the command holds: the offline resolve and the replay of a
    file (their reading and deciding leave no cyclic garbage, on good lines or refused
    ones; tests hold them to that), and the young collections would only add to their
    time. The collector is put back as it was when the block ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
