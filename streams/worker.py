"""Start a worker: load the policy, create the topics, build the app and run it."""

from __future__ import annotations

import asyncio
import logging

from streams.agents import install
from streams.alerting import AlertRuntime
from streams.app import build_app
from streams.core.argue.verdicts import VerdictConfig
from streams.docs_agents import install_docs
from streams.docs_edge import DocsEdge
from streams.metrics import Metrics
from streams.plans_agents import install_plans, plans_edge
from streams.policy_file import load_policy
from streams.runtime import Runtime
from streams.settings import WorkerSettings, client_security
from streams.topics import TopicNames, ensure_topics
from streams.verdicts_edge import VerdictsEdge


def run_worker(settings: WorkerSettings) -> None:
    """Run until stopped (SIGINT/SIGTERM stop it cleanly)."""
    policy = load_policy(settings.policy_path)
    names = TopicNames(settings.prefix)
    asyncio.run(ensure_topics(settings.bootstrap, names, settings.partitions, **client_security()))
    pipe = build_app(settings)
    runtime = Runtime(policy, names, settings.partitions, pipe.facts)
    alerting = AlertRuntime(policy, settings.partitions, pipe.detectors)
    edge = VerdictsEdge(
        VerdictConfig.from_policy(policy.policy), names, settings.partitions, pipe.verdicts_table
    )
    metrics = Metrics(policy)
    on_decision = install_plans(pipe, plans_edge(pipe), metrics)
    install(pipe, runtime, alerting, metrics, edge, on_decision)
    install_docs(pipe, DocsEdge(names, settings.partitions, pipe.docs), metrics)
    from faust import Worker

    logging.getLogger("faust").setLevel(settings.log_level.upper())
    worker = Worker(pipe.app, loglevel=settings.log_level, quiet=True)
    # Faust's terminal spinner sets the root logger to DEBUG so that it spins on every
    # record: every aiokafka debug call then builds a LogRecord (about 7 % of a busy
    # worker's CPU). Without it the root logger keeps the configured level.
    worker.spinner = None
    worker.execute_from_commandline()
