"""Start a worker: load the policy, create the topics, build the app and run it."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from typing import Any

from faust import Worker

from streams.agents import install, supervisor
from streams.alerting import AlertRuntime
from streams.app import build_app
from streams.core.argue.verdicts import VerdictConfig
from streams.docs_agents import install_docs
from streams.docs_edge import DocsEdge
from streams.health import install_health
from streams.liveness import BrokerWatch, CrashBudget
from streams.metrics import Metrics
from streams.plans_agents import install_plans, plans_edge
from streams.policy_file import load_policy
from streams.runtime import Runtime, TableFacts
from streams.settings import WorkerSettings, client_security
from streams.store import partition_scan
from streams.topics import TopicNames, ensure_topics
from streams.verdicts_edge import VerdictsEdge

log = logging.getLogger(__name__)


#: Exit code of a worker stopped because an agent kept crashing.
EXIT_AGENT_CRASHES = 3


class ClaimwatchWorker(Worker):
    """Faust's worker, but a clean stop leaves the consumer group at once.

    With static membership (`group.instance.id`) the Kafka client never sends LeaveGroup,
    so after a clean stop the other workers would wait for the session to time out before
    they take over its partitions. Dropping the instance id just before stopping makes the
    client leave as a dynamic member would; after a crash (SIGKILL) the restarted worker
    still takes its partitions back at once.
    """

    def _schedule_shutdown(self, signal: signal.Signals) -> None:
        leave_group_on_stop(self.app)
        super()._schedule_shutdown(signal)


def leave_group_on_stop(app: Any) -> None:
    """Make the app's Kafka consumer send LeaveGroup when it stops."""
    try:
        coordinator = app.consumer._thread._ensure_consumer()._coordinator
    except Exception:  # no consumer yet: nothing to leave
        return
    coordinator._group_instance_id = None


def run_worker(settings: WorkerSettings) -> None:
    """Run until stopped (SIGINT/SIGTERM stop it cleanly; repeated agent crashes exit 3)."""
    policy = load_policy(settings.policy_path, max_bytes=settings.max_policy_bytes)
    names = TopicNames(settings.prefix)
    asyncio.run(ensure_topics(settings.bootstrap, names, settings.partitions, **client_security()))
    pipe = build_app(settings)
    runtime = Runtime(
        policy,
        names,
        settings.partitions,
        pipe.facts,
        TableFacts(pipe.facts, items_of=partition_scan(pipe.facts)),
        lateness_us=int(settings.lateness_s * 1_000_000),
        wall_clock_us=lambda: int(time.time() * 1_000_000),
    )
    alerting = AlertRuntime(policy, settings.partitions, pipe.detectors)
    edge = VerdictsEdge(
        VerdictConfig.from_policy(policy.policy), names, settings.partitions, pipe.verdicts_table
    )
    metrics = Metrics(policy)
    budget = CrashBudget()
    broker = BrokerWatch(timeout_s=settings.health_broker_timeout_s)
    logging.getLogger("faust").setLevel(settings.log_level.upper())
    worker = ClaimwatchWorker(pipe.app, loglevel=settings.log_level, quiet=True)

    def too_many_crashes(agent: str) -> None:
        log.critical(
            "agent %s crashed more than %d times in %.0f s: stopping the worker (exit %d) "
            "so that its supervisor restarts it",
            agent,
            budget.limit,
            budget.window_s,
            EXIT_AGENT_CRASHES,
        )
        worker._schedule_shutdown(signal.SIGTERM)

    supervise = supervisor(metrics, budget, too_many_crashes)
    on_decision = install_plans(pipe, plans_edge(pipe), metrics, supervise)
    install(pipe, runtime, alerting, metrics, supervise, edge, on_decision)
    install_docs(pipe, DocsEdge(names, settings.partitions, pipe.docs), metrics, supervise)
    install_health(pipe, metrics, budget, broker)
    # Faust's terminal spinner sets the root logger to DEBUG so that it spins on every
    # record: every aiokafka debug call then builds a LogRecord (about 7 % of a busy
    # worker's CPU). Without it the root logger keeps the configured level.
    worker.spinner = None
    try:
        worker.execute_from_commandline()
    except SystemExit as stop:
        if budget.exceeded is not None:
            raise SystemExit(EXIT_AGENT_CRASHES) from None
        raise stop
