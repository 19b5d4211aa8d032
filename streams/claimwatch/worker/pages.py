"""The worker's /health and /metrics pages, the broker probe and the agent stop page.

/health is 200 only when recovery is done, every agent runs and the broker answered within
`--health-broker-timeout`; otherwise 503 with the reasons. /metrics adds the consumer lag
of every assigned partition (end offset minus committed offset) at scrape time.

Only reads are open. `POST /agents/{name}/stop` changes the worker, so it takes the
bearer token of `CLAIMWATCH_ADMIN_TOKEN` (`Authorization: Bearer <token>`): a form posted
from another site cannot set that header, nor can anyone who merely reaches the port.
Without a token configured the route is off (403).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from typing import Any

from aiohttp import web as aioweb
from faust.web import View
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from claimwatch.worker.app import Pipeline
from claimwatch.worker.faust_private import committed_offset, kafka_producer, metadata_request
from claimwatch.worker.liveness import BrokerWatch, CrashBudget, health_reasons
from claimwatch.worker.loop import running_loop
from claimwatch.worker.metrics import Metrics

log = logging.getLogger(__name__)

#: How often the broker is asked for its metadata, and how long one answer may take.
PROBE_INTERVAL_S = 2.0
PROBE_TIMEOUT_S = 5.0
#: The shortest admin token taken (a shorter one leaves the admin routes off).
MIN_ADMIN_TOKEN_CHARS = 16


def admin_refusal(token: str | None, authorization: str | None) -> tuple[int, str] | None:
    """Why a request with this `Authorization` header may not change the worker (None: it may).

    403 when no usable token is configured (the route is off), 401 when the request does
    not carry it. The token is compared in constant time.
    """
    if token is None:
        return 403, (
            "admin routes are off: set CLAIMWATCH_ADMIN_TOKEN (at least "
            f"{MIN_ADMIN_TOKEN_CHARS} characters) for the worker, and send "
            "`Authorization: Bearer <token>`"
        )
    if len(token) < MIN_ADMIN_TOKEN_CHARS:
        return 403, (
            f"admin routes are off: CLAIMWATCH_ADMIN_TOKEN is shorter than "
            f"{MIN_ADMIN_TOKEN_CHARS} characters"
        )
    scheme, _, given = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), token.encode()
    ):
        return 401, "this route needs `Authorization: Bearer <CLAIMWATCH_ADMIN_TOKEN>`"
    return None


def recovering(app: Any) -> bool:
    """True while partitions are being assigned or tables restored."""
    recovery = app.tables.recovery
    return bool(app.rebalancing or recovery.in_recovery or not recovery.completed.is_set())


def current_reasons(app: Any, budget: CrashBudget, broker: BrokerWatch) -> list[str]:
    """Why this worker is unhealthy now (empty: healthy)."""
    return health_reasons(
        recovering=recovering(app), agents=app.agents.values(), budget=budget, broker=broker
    )


async def observe_lag(app: Any, metrics: Metrics) -> None:
    """Set claimwatch_consumer_lag_records for every partition this worker consumes.

    The end offset is the consumer's last fetched highwater; for a partition not fetched
    yet (just assigned) it is asked of the broker.
    """
    consumer = app.consumer
    tps = sorted(
        tp
        for tp in consumer.assignment()
        if not tp.topic.endswith("-changelog") and "__assignor" not in tp.topic
    )  # changelogs are read for recovery, never committed
    ends = {tp: consumer.highwater(tp) for tp in tps}
    unknown = [tp for tp, end in ends.items() if end is None]
    if unknown:
        ends.update(await asyncio.wait_for(consumer.highwaters(*unknown), PROBE_TIMEOUT_S))
    metrics.consumer_lag.clear()
    for tp in tps:
        end = ends.get(tp)
        if end is None:
            continue
        committed = committed_offset(consumer, tp)
        metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(
            max(0, int(end) - int(committed or 0))
        )


async def probe_broker(app: Any, broker: BrokerWatch) -> None:
    """Ask the broker for its metadata; note when it answers."""
    producer = kafka_producer(app)
    try:
        await asyncio.wait_for(metadata_request(producer), PROBE_TIMEOUT_S)
    except Exception as exc:  # any failure means: no answer this time
        log.debug("broker probe failed: %r", exc)
        return
    broker.answered()


def install_health(
    pipe: Pipeline, metrics: Metrics, budget: CrashBudget, broker: BrokerWatch
) -> None:
    """Register /health, /metrics, the broker probe timer and /agents/{name}/stop."""
    app = pipe.app

    @app.timer(PROBE_INTERVAL_S)
    async def broker_probe() -> None:
        await probe_broker(app, broker)

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        metrics.recovered.set(0 if current_reasons(app, budget, broker) else 1)
        try:
            await observe_lag(app, metrics)
        except Exception as exc:  # no consumer yet, or the broker did not answer in time
            log.debug("consumer lag not observed: %r", exc)
        return aioweb.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    @app.page("/health")
    async def health_page(web: Any, request: Any) -> Any:
        reasons = current_reasons(app, budget, broker)
        status = "unhealthy" if reasons else "ok"
        body = {"status": status, "reasons": reasons, "loop": running_loop()}
        return web.json(body, status=503 if reasons else 200)

    def agent_named(name: str) -> Any | None:
        return next((a for a in app.agents.values() if a.name.rsplit(".", 1)[-1] == name), None)

    token = pipe.settings.admin_token

    @app.page("/agents/{name}/stop")
    class AgentStop(View):
        """POST: stop one agent (maintenance); /health is 503 until the worker restarts.

        It takes the admin token (see `admin_refusal`).
        """

        async def post(self, request: Any, name: str) -> Any:
            refusal = admin_refusal(token, request.headers.get("Authorization"))
            if refusal is not None:
                status, error = refusal
                headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
                return self.json({"error": error}, status=status, headers=headers)
            agent = agent_named(name)
            if agent is None:
                names = sorted(a.name.rsplit(".", 1)[-1] for a in app.agents.values())
                return self.json({"error": f"no agent {name}", "agents": names}, status=404)
            await agent.stop()
            log.warning("agent %s stopped by POST /agents/%s/stop", name, name)
            return self.json({"agent": name, "stopped": True})
