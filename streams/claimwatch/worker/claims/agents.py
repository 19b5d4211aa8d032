"""The claims agent, the tick timer and the fact page: load state, call the step, send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from claimwatch.core.claim import fact_key
from claimwatch.core.covering import QueryError, covering_ids, covers, missing, wait_seconds
from claimwatch.wire.codec import loads
from claimwatch.worker.agent_loop import guarded_agent
from claimwatch.worker.app import Pipeline
from claimwatch.worker.backpressure import InFlight
from claimwatch.worker.changelog import DirectTable
from claimwatch.worker.claims.edge import ClaimsHandled, Runtime
from claimwatch.worker.claims.waiting import Crowded, Refused, Waiters
from claimwatch.worker.forwarding import answer_elsewhere
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics, Tally
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.partition_state import forget_on_rebalance
from claimwatch.worker.record_guard import RecordGuard
from claimwatch.worker.sending import count, send_through, topics_of
from claimwatch.worker.supervision import Supervise
from claimwatch.worker.timers import install_ticks

#: How often the detectors' entries are sent at least, when no tick comes (seconds).
ENTRIES_EVERY_S = 1.0
#: The claim statuses counted by name (any other is counted as `other`).
_STATUS_LABELS = frozenset({"ok", "not_found", "forbidden", "unavailable", "error"})
#: Given each decision made (fact key, record) after it is sent (plan blocking)
OnDecision = Callable[[bytes, dict[str, Any]], Awaitable[None]]


def install_claims(
    pipe: Pipeline,
    runtime: Runtime,
    facts: DirectTable,
    metrics: Metrics,
    supervise: Supervise,
    on_decision: OnDecision | None = None,
) -> None:
    """Register the claims agent, the tick timer of the claims partitions and the fact page.

    `facts` is the fact table the runtime writes (`runtime.table`); its changelog records,
    and those of the resolutions table, are sent before each input record is done (see
    `claimwatch.worker.changelog`). `on_decision` is given each decision made (fact key,
    record) after it is sent, for processors that live on the fact's partition (plan
    blocking). Every record is handled inside the shared per-record guard; `supervise`
    counts agent crashes.
    """
    app = pipe.app
    topics = topics_of(pipe)
    in_flight = InFlight()
    resolutions = DirectTable(pipe.resolutions, direct=facts.direct)

    async def send_changes() -> None:
        for table in (facts, resolutions):
            await table.send_changes(app.producer, in_flight.admit)

    async def send(out: Outgoing) -> None:
        # at-least-once: straight to the producer, which Faust flushes before it commits
        # offsets (the Topic/Channel layers cost more than the send itself); in a
        # transaction through the topic, so the record joins the partition's transaction
        if app.in_transaction:
            await send_through(topics[out.topic], out)
        else:
            sent = await app.producer.send(
                out.topic, out.key, out.value, out.partition, None, list(out.headers) or None
            )
            await in_flight.admit(asyncio.ensure_future(sent))

    guard = RecordGuard(pipe.names, send, metrics)
    # requests waiting for a decision that covers their claims, bounded
    waiters = Waiters(pipe.settings.max_waiters, pipe.settings.max_waiters_per_fact)
    tally = Tally()  # the batch's counts, added to their series once it is handled

    async def decide_one(record: Record) -> None:
        started = time.perf_counter()
        try:
            handled = runtime.handle(
                record.partition, record.offset, record.key, record.value, record.timestamp_us
            )
            for key, body in handled.resolutions:
                resolutions[key] = body
        finally:
            # what reached the store reaches the changelog, even from a record that failed
            await send_changes()
        for out in handled.sends:
            await send(out)
        if record.key is not None:  # a claim at home: its record key is its fact key
            for claim_id, reason in handled.refused:
                waiters.refuse(record.key, claim_id, reason)
        if on_decision is not None or waiters:
            for (key, _body), decided in zip(handled.resolutions, handled.decided, strict=True):
                waiters.offer(key, decided.record)
                if on_decision is not None:
                    await on_decision(key, decided.record)
        _count(metrics, handled, tally)
        metrics.latency.observe(time.perf_counter() - started)

    drained = time.monotonic()

    async def send_entries() -> None:
        # the decisions of the last second (or a full record's worth), summed up per field;
        # a crash may cost the detectors that second, as it may their state's last second
        nonlocal drained
        tally.flush()
        now = time.monotonic()
        if runtime.staged_full() or now - drained >= ENTRIES_EVERY_S:
            drained = now
            for out in runtime.drain():
                await send(out)

    guarded_agent(
        pipe,
        pipe.claims,
        "claimwatch.worker.claims.agents.process_claims",
        supervise,
        guard,
        decide_one,
        runtime.abandon,
        batched=True,
        after_batch=send_entries,
    )

    install_ticks(pipe, pipe.claims, pipe.names.claims)

    @pipe.facts.on_recover
    async def on_facts_recovered() -> None:
        # processors made before the table finished recovering hold an incomplete deadline
        # index: drop them, they are rebuilt from the recovered table on the next record
        runtime.forget()

    forget_on_rebalance(app, pipe.names.claims, runtime.forget)

    @app.page("/facts/{subject}/{field}")
    async def fact_page(web: Any, request: Any, subject: str, field: str) -> Any:
        try:
            ids = covering_ids(request.query.get("covering"))
            wait = wait_seconds(request.query.get("wait"))
        except QueryError as exc:
            return web.json({"error": str(exc)}, status=400)
        key = fact_key(subject, field).encode()
        elsewhere = await answer_elsewhere(pipe, key, web, request)
        if elsewhere is not None:
            return elsewhere
        return await _fact_answer(web, pipe, waiters, key, ids, wait)


async def _fact_answer(
    web: Any,
    pipe: Pipeline,
    waiters: Waiters,
    key: bytes,
    covering: tuple[str, ...] | None,
    wait: float,
) -> Any:
    """The fact page's answer: the current decision once it covers the `covering` ids.

    It waits up to `wait` seconds for such a decision (woken by it); 404 without a
    decision, 408 when none covers them in time (with the current decision, if any), 422
    when one of the claims was dead-lettered with no decision to come (with the reason),
    429 when this worker or the fact has as many waiting requests as it takes.
    """
    ids = covering or ()
    refused = waiters.refusal(key, ids)
    if refused is not None:
        return _refused(web, key, refused)
    current = _current(pipe, key)
    if not covers(current, ids) and wait > 0:
        try:
            outcome = await waiters.wait(key, ids, wait)
        except Crowded as exc:
            error = f"too many waiting requests: {exc}; ask again in {exc.retry_after_s} s"
            headers = {"Retry-After": str(exc.retry_after_s)}
            return web.json({"error": error, "reason": "crowded"}, status=429, headers=headers)
        if isinstance(outcome, Refused):
            return _refused(web, key, outcome)
        current = outcome if outcome is not None else _current(pipe, key)
    fact = key.decode()
    if covers(current, ids):
        return web.json(current)
    if covering is None:
        return web.json({"error": f"no decision for {fact}"}, status=404)
    absent = missing(current, ids)
    headers = {"X-Claimwatch-Missing": ",".join(absent)}
    if current is not None:  # what stands now, for the caller to see what it lacks
        return web.json(current, status=408, headers=headers)
    error = f"no decision for {fact} covers {', '.join(absent)} yet"
    return web.json({"error": error, "missing": absent}, status=408, headers=headers)


def _refused(web: Any, key: bytes, refused: Refused) -> Any:
    """422: a claim of the request was dead-lettered and will not be decided."""
    fact = key.decode(errors="replace")
    return web.json(
        {
            "error": f"claim {refused.claim_id} of {fact} was dead-lettered: {refused.reason}",
            "refused": {refused.claim_id: refused.reason},
        },
        status=422,
    )


def _current(pipe: Pipeline, key: bytes) -> Any:
    """The fact's current decision (None when it has none)."""
    body = pipe.resolutions.get(key)
    return loads(body) if body is not None else None


def _count(metrics: Metrics, handled: ClaimsHandled, tally: Tally) -> None:
    count(metrics, handled.sends, handled.events, tally)
    claim = handled.claim
    if claim is not None:
        status = claim.status if isinstance(claim.status, str) else "invalid"
        tally.add(
            metrics.claims,
            metrics.field(claim.field),
            metrics.source(claim.source),
            status if status in _STATUS_LABELS else "other",
        )
    for aside in handled.quarantined:  # (each logged once by the runtime)
        tally.add(metrics.quarantined_facts, "claims", metrics.field(aside.field))
    for decided in handled.decided:
        record = decided.record
        field = metrics.field(record["field"])
        tally.add(metrics.decisions, field, record["outcome"])
        if decided.conflict_event == "entered":
            tally.add(metrics.conflicts, field, record["conflict_kind"] or "value")
