"""A stream's events taken in batches, each made the current event while it is handled."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from claimwatch.worker.faust_private import set_current_event


async def batched_events(
    stream: Any,
    most: int,
    within: float,
    after: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[Any]:
    """The stream's events, taken in batches of up to `most` (waiting at most `within` s).

    `after` is awaited once the last event of each batch is handled (each event is a batch
    of its own when `most` is 1).

    Faust acks (and so commits) a batch's events once the whole batch is handled. While an
    event is handled it is made the task's current event (the context variable Faust's
    tables and transactions consult), so that a table write through Faust goes to the
    changelog partition of that record, as with `stream.events()`. The stream's own
    `current_event` attribute is left alone: `take_events` reads it to pair each buffered
    value with its event while this batch is handled, and changing it loses records.
    Records of a partition revoked while they waited in the batch are still handled: what
    they send again is dropped by id downstream, while skipping them would lose them if
    the revocation were not final.
    """
    if most <= 1:  # record by record, as Faust streams go
        async for event in stream.events():
            yield event
            if after is not None:
                await after()
        return
    async for events in stream.take_events(most, within=within):
        for event in events:
            set_current_event(event)
            yield event
        if after is not None:
            await after()
