"""The worker's agents, timer and web pages: load state, call the pure step, store and send."""

from __future__ import annotations

import asyncio
import functools
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

import aiohttp
import faust
from aiohttp import web as aioweb
from faust.streams import _current_event

from streams.alerting import AlertRuntime
from streams.app import Pipeline
from streams.backpressure import InFlight
from streams.codec import dumps, loads
from streams.guard import Record, RecordGuard, record_of
from streams.health import recovering
from streams.liveness import CrashBudget
from streams.metrics import Metrics, dlq_reason_label
from streams.runtime import TICK_KEY, Handled, Outgoing, Runtime, tick_value
from streams.verdicts_edge import VerdictsEdge

AgentFun = Callable[[Any], Awaitable[None]]


def install(
    pipe: Pipeline,
    runtime: Runtime,
    alerting: AlertRuntime,
    metrics: Metrics,
    supervise: Callable[[str], Callable[[AgentFun], AgentFun]],
    verdicts: VerdictsEdge | None = None,
    on_decision: Callable[[int, bytes, bytes], Awaitable[None]] | None = None,
) -> None:
    """Register the claims, alerts and verdicts agents, the tick timer and the fact page.

    `on_decision` is given each decision made (partition, fact key, record JSON) after it
    is sent, for processors that live on the fact's partition (plan blocking). Every record
    is handled inside the shared per-record guard; `supervise` counts agent crashes.
    """
    app = pipe.app
    settings = pipe.settings
    topics = {
        pipe.names.claims: pipe.claims,
        pipe.names.decisions: pipe.decisions,
        pipe.names.conflicts: pipe.conflicts,
        pipe.names.dlq: pipe.dlq,
        pipe.names.alerts_input: pipe.alerts_input,
        pipe.names.verdicts: pipe.verdicts,
        pipe.names.verdicts_decisions: pipe.verdicts_decisions,
    }

    async def send(out: Outgoing) -> None:
        # at-least-once: straight to the producer, which Faust flushes before it commits
        # offsets (the Topic/Channel layers cost more than the send itself); in a
        # transaction through the topic, so the record joins the partition's transaction
        if app.in_transaction:
            await _send(topics[out.topic], out)
        else:
            sent = await app.producer.send(
                out.topic, out.key, out.value, out.partition, None, list(out.headers) or None
            )
            await in_flight.admit(asyncio.ensure_future(sent))

    in_flight = InFlight()
    guard = RecordGuard(pipe.names, send, metrics)
    if verdicts is not None:
        _install_verdicts(pipe, verdicts, metrics, topics, supervise)

    async def detect_one(record: Record) -> None:
        batch = alerting.handle(record.partition, record.value or b"")
        for alert in batch.alerts:
            key = str(alert.get("field", "")).encode()
            await pipe.alerts.send(key=key, value=dumps(alert))
            metrics.observe_alert(alert)
        for fig in batch.figures:
            metrics.observe_source(
                fig.field, fig.source, fig.status, fig.lag_seconds, fig.dissent_ratio
            )

    @app.agent(pipe.alerts_input, concurrency=1)
    @supervise("detect")
    async def detect(stream: faust.StreamT[bytes]) -> None:
        async for event in batched_events(stream, settings.batch_max, settings.batch_within_s):
            await guard.run(record_of(event), detect_one, lambda _p: alerting.forget())

    async def decide_one(record: Record) -> None:
        started = time.perf_counter()
        handled = runtime.handle(
            record.partition, record.offset, record.key, record.value, record.timestamp_us
        )
        for key, body in handled.resolutions:
            pipe.resolutions[key] = body
        for out in handled.sends:
            await send(out)
        if on_decision is not None:
            for key, body in handled.resolutions:
                await on_decision(record.partition, key, body)
        _count(metrics, handled)
        metrics.latency.observe(time.perf_counter() - started)

    @app.agent(pipe.claims, concurrency=1)
    @supervise("process_claims")
    async def process_claims(stream: faust.StreamT[bytes]) -> None:
        async for event in batched_events(stream, settings.batch_max, settings.batch_within_s):
            await guard.run(record_of(event), decide_one, runtime.abandon)

    @app.timer(pipe.settings.tick_interval_s)
    async def write_ticks() -> None:
        at = int((time.time() - pipe.settings.lateness_s) * 1_000_000)
        for tp in app.assignor.assigned_actives():
            if tp.topic == pipe.names.claims:
                await pipe.claims.send(key=TICK_KEY, value=tick_value(at), partition=tp.partition)
            elif tp.topic == pipe.names.verdicts and verdicts is not None:
                await pipe.verdicts.send(key=TICK_KEY, value=tick_value(at), partition=tp.partition)

    @pipe.facts.on_recover
    async def on_facts_recovered() -> None:
        # processors made before the table finished recovering hold an incomplete deadline
        # index: drop them, they are rebuilt from the recovered table on the next record
        runtime.forget()

    @pipe.detectors.on_recover
    async def on_detectors_recovered() -> None:
        alerting.forget()

    def forget(moved: set[int]) -> None:
        runtime.forget(moved)
        alerting.forget()

    forget_on_rebalance(app, pipe.names.claims, forget)

    @app.page("/facts/{subject}/{field}")
    async def fact_page(web: Any, request: Any, subject: str, field: str) -> Any:
        key = f"{subject}|{field}".encode()
        elsewhere = await answer_elsewhere(pipe, key, web, request)
        if elsewhere is not None:
            return elsewhere
        body = pipe.resolutions.get(key)
        if body is None:
            return web.json({"error": f"no decision for {subject}|{field}"}, status=404)
        return web.json(loads(body))


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
        await _send(topics[out.topic], out)

    return RecordGuard(pipe.names, send, metrics)


def _install_verdicts(
    pipe: Pipeline,
    edge: VerdictsEdge,
    metrics: Metrics,
    topics: dict[str, Any],
    supervise: Callable[[str], Callable[[AgentFun], AgentFun]],
) -> None:
    """The verdicts agent: signals and ticks in, one decision per request out."""
    app = pipe.app
    guard = guarded_sender(pipe, topics, metrics)

    async def verdict_one(record: Record) -> None:
        handled = edge.handle(record.partition, record.offset, record.key, record.value or b"")
        await send_counted(topics, handled.sends, handled.events, metrics)

    @app.agent(pipe.verdicts, concurrency=1)
    @supervise("process_verdicts")
    async def process_verdicts(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            await guard.run(record_of(event), verdict_one, lambda _p: edge.forget())

    @pipe.verdicts_table.on_recover
    async def on_verdicts_recovered() -> None:
        edge.forget()

    forget_on_rebalance(app, pipe.names.verdicts, edge.forget)


def forget_on_rebalance(app: Any, topic: str, forget: Callable[[set[int]], None]) -> None:
    """Call `forget` with the partitions of `topic` revoked or assigned at each rebalance."""

    async def moved(_app: Any, partitions: Any, **_: Any) -> None:
        forget({tp.partition for tp in partitions if tp.topic == topic})

    app.on_partitions_revoked.connect(moved)
    app.on_partitions_assigned.connect(moved)


async def batched_events(stream: Any, most: int, within: float) -> AsyncIterator[Any]:
    """The stream's events, taken in batches of up to `most` (waiting at most `within` s).

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
        return
    async for events in stream.take_events(most, within=within):
        for event in events:
            _current_event.set(weakref.ref(event))
            yield event


async def send_counted(
    topics: Mapping[str, Any], sends: Iterable[Outgoing], events: Iterable[str], metrics: Metrics
) -> None:
    """Send what an edge returned through its Faust topics; count its events and dead letters."""
    for out in sends:
        await _send(topics[out.topic], out)
        if out.headers:
            reason = dict(out.headers).get("claimwatch.reason", b"").decode()
            metrics.dead_letters.labels(dlq_reason_label(reason)).inc()
    for name in events:
        metrics.events.labels(name).inc()


async def _send(topic: Any, out: Outgoing) -> None:
    await topic.send(
        key=out.key, value=out.value, partition=out.partition, headers=list(out.headers) or None
    )


def _count(metrics: Metrics, handled: Handled) -> None:
    for event in handled.events:
        metrics.events.labels(event).inc()
    claim = handled.claim
    if claim is not None:
        status = claim.status if isinstance(claim.status, str) else "invalid"
        metrics.claims.labels(
            metrics.field(claim.field),
            metrics.source(claim.source),
            status
            if status in {"ok", "not_found", "forbidden", "unavailable", "error"}
            else "other",
        ).inc()
    for out in handled.sends:
        if out.headers:
            reason = dict(out.headers).get("claimwatch.reason", b"").decode()
            metrics.dead_letters.labels(dlq_reason_label(reason)).inc()
    for decided in handled.decided:
        record = decided.record
        field = metrics.field(record["field"])
        metrics.decisions.labels(field, record["outcome"]).inc()
        if record["outcome"] == "conflict" and decided.previous_outcome != "conflict":
            metrics.conflicts.labels(field, record["conflict_kind"] or "value").inc()


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
        return await _forward(owner, request)
    if recovering(app):
        return web.json({"error": "recovering"}, status=503)
    return None


def _owner_url(app: Any, pipe: Pipeline, key: bytes) -> str | None:
    """The web URL of the worker that holds the fact's partition, when known."""
    try:
        return str(app.router.key_store(pipe.resolutions.name, key))
    except (KeyError, LookupError):
        return None


async def _forward(owner: str, request: Any) -> Any:
    url = owner.rstrip("/") + request.path
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers={"X-Claimwatch-Forwarded": "1"}) as response,
    ):
        body = await response.read()
        return aioweb.Response(body=body, status=response.status, content_type="application/json")
