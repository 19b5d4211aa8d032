"""The Faust side every feature's agents share: supervision, batches, sends, rebalances, pages.

Agents are thin: they read records, hand each to their edge inside the per-record guard,
and send what comes back through the helpers here.
"""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import aiohttp
import faust
import yarl
from aiohttp import web as aioweb
from faust.streams import _current_event

from claimwatch.core.covering import QueryError, wait_seconds
from claimwatch.wire.topics import partition_for
from claimwatch.worker.app import Pipeline
from claimwatch.worker.collector import collect_full
from claimwatch.worker.edge import (
    TICK_KEY,
    Handled,
    Outgoing,
    Record,
    RecordGuard,
    record_of,
    tick_at,
    tick_value,
)
from claimwatch.worker.liveness import CrashBudget
from claimwatch.worker.metrics import Metrics, Tally, dlq_reason_label, increment
from claimwatch.worker.pages import recovering
from claimwatch.worker.store import flush_all

#: Seconds a forwarded page may take beyond the wait it asks for.
FORWARD_SLACK_S: Final = 5.0
#: The headers of the owner's answer a forwarded page passes on.
FORWARDED_HEADERS: Final = ("Content-Type", "Retry-After", "X-Claimwatch-Missing")

AgentFun = Callable[[Any], Awaitable[None]]
Supervise = Callable[[str], Callable[[AgentFun], AgentFun]]


def topics_of(pipe: Pipeline) -> dict[str, Any]:
    """The Faust topic of every output (and input) topic name an edge may send to."""
    return {
        pipe.names.claims: pipe.claims,
        pipe.names.decisions: pipe.decisions,
        pipe.names.conflicts: pipe.conflicts,
        pipe.names.dlq: pipe.dlq,
        pipe.names.alerts_input: pipe.alerts_input,
        pipe.names.verdicts: pipe.verdicts,
        pipe.names.verdicts_decisions: pipe.verdicts_decisions,
    }


def supervisor(
    metrics: Metrics, budget: CrashBudget, exceeded: Callable[[str], None]
) -> Callable[[str], Callable[[AgentFun], AgentFun]]:
    """A decorator factory counting the crashes of an agent function (Faust restarts it).

    An exception that leaves an agent is counted in claimwatch_agent_crashes_total and in
    the crash budget; past the budget `exceeded` is called (the worker then stops with a
    non-zero exit code, for its supervisor to restart it).
    """

    def supervise(name: str) -> Callable[[AgentFun], AgentFun]:
        metrics.agent_crashes.labels(name)  # at 0 from the start, for the paging rules

        def wrap(fun: AgentFun) -> AgentFun:
            @functools.wraps(fun)
            async def agent(stream: Any) -> None:
                try:
                    await fun(stream)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    metrics.agent_crashes.labels(name).inc()
                    if budget.crashed(name):
                        exceeded(name)
                    raise

            return agent

        return wrap

    return supervise


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

    `name` is the agent's Faust name (kept from the flat layout); its last part names it
    in /health, the stop endpoint and the crash counter. `reset(partition)` drops what a
    failed record may have half changed. `batched` takes the stream's events in batches
    (the claims and detectors agents: many small records); else one by one.
    `after_batch` runs once the records of a batch are handled, before they are acked
    (guarded too: what it raises is logged and counted, and the agent goes on).
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


def install_ticks(pipe: Pipeline, topic: Any, name: str) -> None:
    """A timer writing a tick (wall clock minus the lateness) into each active partition."""
    settings = pipe.settings

    @pipe.app.timer(settings.tick_interval_s, name=f"ticks:{name}")
    async def write_ticks() -> None:
        at = tick_at(time.time_ns(), settings.lateness_s)
        for tp in pipe.app.assignor.assigned_actives():
            if tp.topic == name:
                await topic.send(key=TICK_KEY, value=tick_value(at), partition=tp.partition)


def install_full_collection(app: faust.App, every_s: float) -> None:
    """A timer running the full garbage collection every `every_s` s (see worker.collector)."""
    if every_s <= 0:
        return  # Python's own collector policy: nothing to run

    @app.timer(every_s, name="full-collection")
    async def full_collection() -> None:
        collect_full()


def install_store_flush(app: faust.App, every_s: float) -> None:
    """A timer flushing the default store's memory tables every `every_s` s (worker.store).

    The store writes without rocksdb's write-ahead log: the flush bounds what a SIGKILL
    costs the next start (the changelog it reads again), as Kafka Streams' flush at commit.
    """

    @app.timer(every_s, name="store-flush")
    async def store_flush() -> None:
        flush_all(app)


def forget_on_rebalance(app: Any, topic: str, forget: Callable[[set[int]], None]) -> None:
    """Call `forget` with the partitions of `topic` revoked or assigned at each rebalance."""

    async def moved(_app: Any, partitions: Any, **_: Any) -> None:
        forget({tp.partition for tp in partitions if tp.topic == topic})

    app.on_partitions_revoked.connect(moved)
    app.on_partitions_assigned.connect(moved)


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
            _current_event.set(weakref.ref(event))
            yield event
        if after is not None:
            await after()


async def send_counted(
    topics: Mapping[str, Any], sends: Iterable[Outgoing], events: Iterable[str], metrics: Metrics
) -> None:
    """Send what an edge returned through its Faust topics; count its events and dead letters."""
    sends = list(sends)
    for out in sends:
        await send_through(topics[out.topic], out)
    count(metrics, sends, events)


def count(
    metrics: Metrics,
    sends: Iterable[Outgoing],
    events: Iterable[str],
    tally: Tally | None = None,
) -> None:
    """Count an edge's events, and its dead letters by reason (into `tally`, when given)."""
    add = tally.add if tally is not None else increment
    for out in sends:
        if out.headers:
            reason = dict(out.headers).get("claimwatch.reason", b"").decode()
            add(metrics.dead_letters, dlq_reason_label(reason))
    for name in events:
        add(metrics.events, name)


async def send_through(topic: Any, out: Outgoing) -> None:
    """Send one record through its Faust topic (so it joins a transaction, if any)."""
    await topic.send(
        key=out.key, value=out.value, partition=out.partition, headers=list(out.headers) or None
    )


async def answer_elsewhere(pipe: Pipeline, key: bytes, web: Any, request: Any) -> Any | None:
    """The answer of a page about `key` when this worker cannot give it, else None.

    Forwarded to the worker that owns the key's partition (tables keyed like `resolutions`
    share its partitions); 503 while this worker recovers or the owner is unknown.
    """
    app = pipe.app
    owner = _owner_url(app, pipe, key)
    if owner is not None and owner.rstrip("/") != str(app.conf.canonical_url).rstrip("/"):
        if request.headers.get("X-Claimwatch-Forwarded"):
            return web.json({"error": "partition owner unknown"}, status=503)
        return await _forward(app, owner, request)
    if recovering(app):
        return web.json({"error": "recovering"}, status=503)
    return None


def _owner_url(app: Any, pipe: Pipeline, key: bytes) -> str | None:
    """The web URL of the worker that holds the key's partition, when known.

    The partition is the one every per-fact record of the key is written to
    (`partition_for`), found without the producer's metadata: Faust's `key_store` asks
    the producer, whose metadata lists only the topics it has sent to since its last
    refresh, and failed with a TypeError on a worker that had not yet written the
    resolutions topic (a 500 and a traceback for every page it should have forwarded).
    """
    topic = pipe.names.resolutions
    partition = partition_for(key, pipe.settings.partitions)
    for url, assigned in app.assignor.table_metadata(topic).items():
        if partition in assigned.get(topic, ()):
            return str(url)
    return None


async def _forward(app: Any, owner: str, request: Any) -> Any:
    """The owner's answer to the same request, through the worker's one HTTP session.

    The path is the request's raw one, as sent (`%2F` or `%3F` in a subject stay part of
    it), with its query (`covering`, `wait`): the owner answers as if asked itself. It
    may take the request's wait plus `FORWARD_SLACK_S`; an owner that does not answer
    in that time, or cannot be reached, is a 504 or 503 with the reason.
    """
    url = yarl.URL(owner.rstrip("/") + request.raw_path, encoded=True)
    timeout = aiohttp.ClientTimeout(total=_wait_of(request) + FORWARD_SLACK_S)
    headers = {"X-Claimwatch-Forwarded": "1"}
    try:
        async with app.http_client.get(url, headers=headers, timeout=timeout) as response:
            body = await response.read()
            kept = {k: v for k in FORWARDED_HEADERS if (v := response.headers.get(k)) is not None}
            return aioweb.Response(body=body, status=response.status, headers=kept)
    except TimeoutError:
        error = f"the worker owning this key ({owner}) did not answer in {timeout.total:g} s"
        return _json_error(error, 504)
    except (aiohttp.ClientError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        return _json_error(f"the worker owning this key ({owner}) is unreachable: {reason}", 503)


def _wait_of(request: Any) -> float:
    """The seconds a request asks to wait (`wait`), 0 when it gives none or a bad one."""
    try:
        return wait_seconds(request.query.get("wait"))
    except QueryError:
        return 0.0


def _json_error(error: str, status: int) -> Any:
    return aioweb.json_response({"error": error}, status=status)
