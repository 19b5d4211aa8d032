"""The one agent loop: each record read goes to its edge inside the per-record guard.

Agents are thin: they read records, hand each to their edge inside the guard, and send
what comes back (`claimwatch.worker.sending`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from claimwatch.worker.app import Pipeline
from claimwatch.worker.batching import batched_events
from claimwatch.worker.input_record import Record, record_of
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.outgoing import Handled, Outgoing
from claimwatch.worker.record_guard import RecordGuard
from claimwatch.worker.sending import send_counted, send_through
from claimwatch.worker.supervision import Supervise


def guarded_sender(pipe: Pipeline, topics: Mapping[str, Any], metrics: Metrics) -> RecordGuard:
    """A per-record guard that dead-letters through the given Faust topics."""

    async def send(out: Outgoing) -> None:
        await send_through(topics[out.topic], out)

    return RecordGuard(pipe.names, send, metrics)


def guarded_agent(
    pipe: Pipeline,
    channel: Any,
    name: str,
    supervise: Supervise,
    guard: RecordGuard,
    one: Callable[[Record], Awaitable[None]],
    reset: Callable[[int], None],
    *,
    batched: bool = False,
    after_batch: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """The one agent loop: each record read goes to `one` inside the per-record guard.

    `name` is the agent's Faust name; its last part names it in /health, the stop
    endpoint and the crash counter. `reset(partition)` drops what a failed record may
    have half changed. `batched` takes the stream's events in batches (the claims and
    detectors agents: many small records); else one by one. `after_batch` runs once the
    records of a batch are handled, before they are acked (guarded too: what it raises is
    logged and counted, and the agent goes on).
    """
    settings = pipe.settings

    topic = ",".join(channel.topics)  # the input topic(s), as the error counter names them

    async def after() -> None:
        if after_batch is not None:
            await guard.settle(topic, after_batch)

    @pipe.app.agent(channel, name=name, concurrency=1)
    @supervise(name.rsplit(".", 1)[-1])
    async def agent(stream: Any) -> None:
        events = (
            batched_events(stream, settings.batch_max, settings.batch_within_s, after)
            if batched
            else stream.events()
        )
        async for event in events:
            await guard.run(record_of(event), one, reset)


def record_agent(
    pipe: Pipeline,
    channel: Any,
    name: str,
    supervise: Supervise,
    metrics: Metrics,
    topics: Mapping[str, Any],
    handle: Callable[[Record], Handled],
    reset: Callable[[int], None],
) -> None:
    """An agent handing its records one by one to its edge (see `guarded_agent`).

    What the edge returns is sent through `topics` and counted. For inputs that are few
    (plans, verdict requests, documents).
    """

    async def one(record: Record) -> None:
        handled = handle(record)
        await send_counted(topics, handled.sends, handled.events, metrics)

    guard = guarded_sender(pipe, topics, metrics)
    guarded_agent(pipe, channel, name, supervise, guard, one, reset)
