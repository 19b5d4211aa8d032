"""Start a worker: load the policy, create the topics, build the app and run it."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from claimwatch.core.argue.verdicts import VerdictConfig, VerdictLimits
from claimwatch.policy.loading import load_policy
from claimwatch.wire.topics import (
    BrokerUnavailable,
    TopicNames,
    TopicsRefused,
    ensure_changelogs,
    ensure_topics,
)
from claimwatch.worker import collector
from claimwatch.worker.alerts.agents import install_alerts
from claimwatch.worker.alerts.edge import AlertRuntime
from claimwatch.worker.app import Pipeline, build_app
from claimwatch.worker.changelog import DirectTable
from claimwatch.worker.claims.agents import install_claims
from claimwatch.worker.claims.edge import Runtime
from claimwatch.worker.claims.facts import TableFacts
from claimwatch.worker.docs.agents import install_docs
from claimwatch.worker.docs.edge import DocsEdge
from claimwatch.worker.faust_private import StopSignalWorker, leave_group_on_stop
from claimwatch.worker.liveness import BrokerWatch, CrashBudget
from claimwatch.worker.loop import install_loop
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.pages import install_health
from claimwatch.worker.plans.agents import install_plans, plans_edge
from claimwatch.worker.producer_guard import install_producer_guard
from claimwatch.worker.quiet_logs import quiet_faust_checks
from claimwatch.worker.settings import DEFAULT_STOP_TIMEOUT_S, WorkerSettings
from claimwatch.worker.store import FLUSH_EVERY_S, partition_scan
from claimwatch.worker.supervision import supervisor
from claimwatch.worker.timers import install_full_collection, install_store_flush
from claimwatch.worker.verdicts.agents import install_verdicts
from claimwatch.worker.verdicts.edge import VerdictsEdge

log = logging.getLogger(__name__)


#: Exit code of a worker whose topics are not as it needs them (the message says what to run).
EXIT_TOPICS_REFUSED = 2
#: Exit code of a worker stopped because an agent kept crashing.
EXIT_AGENT_CRASHES = 3
#: Exit code of a worker whose stop did not finish in time (see ClaimwatchWorker).
EXIT_STOP_OVERDUE = 4


class ClaimwatchWorker(StopSignalWorker):
    """Faust's worker, but a clean stop leaves the consumer group at once, or times out.

    With static membership (`group.instance.id`) the Kafka client never sends LeaveGroup,
    so after a clean stop the other workers would wait for the session to time out before
    they take over its partitions. Dropping the instance id just before stopping makes the
    client leave as a dynamic member would; after a crash (SIGKILL) the restarted worker
    still takes its partitions back at once.

    A stop waits on the broker (the producer's flush, the last commit, leaving the group):
    with the broker gone it never ended (a SIGTERM left the worker running for minutes).
    A stop not done after `stop_timeout_s` ends the process (exit 4), which is as safe as
    the SIGKILL the kill test covers: uncommitted records are read again, and repeats
    are dropped.
    """

    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S
    _overdue: threading.Timer | None = None

    def on_stop_signal(self, signum: signal.Signals) -> None:
        leave_group_on_stop(self.app)
        if self._overdue is None and self.stop_timeout_s > 0:
            self._overdue = threading.Timer(
                self.stop_timeout_s, stop_overdue, (self.stop_timeout_s,)
            )
            self._overdue.daemon = True
            self._overdue.start()


def stop_overdue(timeout_s: float, exit_now: Callable[[int], object] = os._exit) -> None:
    """End a worker whose stop has not finished in `timeout_s` seconds (exit 4)."""
    log.error(
        "the worker did not stop within %gs (is the broker reachable?): exiting now, "
        "uncommitted records are read again on the next start (CLAIMWATCH_STOP_TIMEOUT_S)",
        timeout_s,
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    exit_now(EXIT_STOP_OVERDUE)


@dataclass(slots=True)
class Wired:
    """The worker's app with every feature installed, and what `run_worker` still needs."""

    pipe: Pipeline
    budget: CrashBudget
    #: called when an agent crashed too often: stops the worker (exit 3)
    on_crash_limit: Callable[[Callable[[], None]], None]


def wire(settings: WorkerSettings) -> Wired:
    """The one place that wires the features: the app, its tables, agents, timers and pages.

    Needs no broker (the topics are created by `run_worker`).
    """
    policy = load_policy(settings.policy_path, max_bytes=settings.max_policy_bytes)
    names = TopicNames(settings.prefix)
    pipe = build_app(settings)
    facts = DirectTable(pipe.facts, direct=not pipe.app.in_transaction)
    runtime = Runtime(
        policy,
        names,
        settings.partitions,
        facts,
        TableFacts(facts, items_of=partition_scan(pipe.facts)),
        lateness_us=int(settings.lateness_s * 1_000_000),
        wall_clock_us=lambda: int(time.time() * 1_000_000),
    )
    alerting = AlertRuntime(policy, settings.partitions, pipe.detectors)
    limits = VerdictLimits(settings.verdict_max_signals, settings.verdict_max_request_bytes)
    edge = VerdictsEdge(
        VerdictConfig.from_policy(policy.policy, limits),
        names,
        settings.partitions,
        pipe.verdicts_table,
        lateness_us=int(settings.lateness_s * 1_000_000),
        wall_clock_us=lambda: int(time.time() * 1_000_000),
    )
    metrics = Metrics(policy)
    budget = CrashBudget()
    broker = BrokerWatch(timeout_s=settings.health_broker_timeout_s)
    stops: list[Callable[[], None]] = []

    def too_many_crashes(agent: str) -> None:
        log.critical(
            "agent %s crashed more than %d times in %.0f s: stopping the worker (exit %d) "
            "so that its supervisor restarts it",
            agent,
            budget.limit,
            budget.window_s,
            EXIT_AGENT_CRASHES,
        )
        for stop in stops:
            stop()

    supervise = supervisor(metrics, budget, too_many_crashes)
    install_producer_guard(pipe.app, names, metrics)
    on_decision = install_plans(pipe, plans_edge(pipe), metrics, supervise)
    install_claims(pipe, runtime, facts, metrics, supervise, on_decision)
    install_full_collection(pipe.app, settings.gc_full_every_s)
    install_store_flush(pipe.app, FLUSH_EVERY_S)
    install_alerts(pipe, alerting, metrics, supervise)
    install_verdicts(pipe, edge, metrics, supervise)
    docs = DocsEdge(
        names,
        settings.partitions,
        pipe.docs,
        max_versions=settings.doc_max_versions,
        max_body_bytes=settings.doc_max_body_bytes,
    )
    install_docs(pipe, docs, metrics, supervise)
    install_health(pipe, metrics, budget, broker)
    return Wired(pipe, budget, stops.append)


def run_worker(settings: WorkerSettings) -> None:
    """Run until stopped (SIGINT/SIGTERM stop it cleanly; repeated agent crashes exit 3)."""
    # before anything makes a loop: Faust's, the topic set-up's and the consumer thread's
    loop = install_loop(settings.loop)
    log.info("event loop: %s", loop)
    wired = wire(settings)
    names = TopicNames(settings.prefix)
    try:
        fixed = asyncio.run(ensure_topics(settings.bootstrap, names, settings.partitions))
    except TopicsRefused as refused:
        print(f"claimwatch: the worker cannot use its topics:\n{refused}", file=sys.stderr)
        raise SystemExit(EXIT_TOPICS_REFUSED) from None
    except BrokerUnavailable as exc:
        print(f"claimwatch: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    for line in fixed:
        log.warning("%s", line)
    changelogs = [t.changelog_topic.get_topic_name() for t in wired.pipe.app.tables.values()]
    asyncio.run(ensure_changelogs(settings.bootstrap, changelogs, settings.partitions))
    logging.getLogger("faust").setLevel(settings.log_level.upper())
    quiet_faust_checks()  # a rebalance: one line per minute, not a paragraph per partition
    worker = ClaimwatchWorker(wired.pipe.app, loglevel=settings.log_level, quiet=True)
    worker.stop_timeout_s = settings.stop_timeout_s
    wired.on_crash_limit(lambda: worker.schedule_shutdown(signal.SIGTERM))
    # Faust's terminal spinner sets the root logger to DEBUG so that it spins on every
    # record: every aiokafka debug call then builds a LogRecord, a cost on every record.
    # Without it the root logger keeps the configured level.
    worker.spinner = None
    # what is made so far lives as long as the process: frozen out of every collection
    collector.tune(settings.gc_full_every_s)
    try:
        worker.execute_from_commandline()
    except SystemExit as stop:
        if wired.budget.exceeded is not None:
            raise SystemExit(EXIT_AGENT_CRASHES) from None
        raise stop
