"""The Faust app of a worker: its topics and tables, built from the settings (no logic here)."""

from __future__ import annotations

import functools
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import aiohttp
import faust

from claimwatch.wire.kafka import client_security
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.settings import WorkerSettings
from claimwatch.worker.store import register as register_store
from claimwatch.worker.store import store_url
from claimwatch.worker.transport import broker_url
from claimwatch.worker.transport import register as register_transport

#: A Faust topic of raw bytes keys and values (Faust ships no type information).
Topic = faust.TopicT
#: A Faust table of raw bytes keys and values, over its compacted changelog topic.
Table: TypeAlias = "faust.Table[bytes, bytes]"


def raw_topic(app: faust.App, *names: str, partitions: int, **extra: Any) -> Topic:
    """A bytes -> bytes topic object over one or more topic names (raw serializers)."""
    return app.topic(
        *names,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=partitions,
        **extra,
    )


def raw_table(app: faust.App, name: str, changelog: Topic, partitions: int) -> Any:
    """A bytes -> bytes table over the given changelog topic.

    key_type/value_type bytes make the table's own serializers raw: the store encodes and
    decodes keys with them (a rocksdb store would otherwise parse keys as JSON).
    """
    return app.Table(
        name,
        schema=faust.Schema(
            key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
        ),
        key_type=bytes,
        value_type=bytes,
        partitions=partitions,
        changelog_topic=changelog,
    )


@dataclass(slots=True)
class Pipeline:
    """The app with its topics and tables."""

    app: faust.App
    settings: WorkerSettings
    names: TopicNames
    claims: Topic
    decisions: Topic
    conflicts: Topic
    dlq: Topic
    alerts: Topic
    facts: Table
    resolutions: Table
    alerts_input: Topic
    detectors: Table
    verdicts: Topic
    verdicts_decisions: Topic
    verdicts_table: Table
    plans_table: Table
    plan_facts: Table
    publish: Topic
    publish_results: Topic
    docs: Table


def _credentials(security: dict[str, Any]) -> Any:
    """Faust credentials from the pass-through client security settings (None: plaintext)."""
    if "sasl_mechanism" in security:
        return faust.SASLCredentials(
            username=security.get("sasl_plain_username"),
            password=security.get("sasl_plain_password"),
            mechanism=security["sasl_mechanism"],
            ssl_context=security.get("ssl_context"),
        )
    if "ssl_context" in security:
        return faust.SSLCredentials(security["ssl_context"])
    return None


def state_dir(settings: WorkerSettings) -> Path:
    """Where the local table state lives: keyed by topic prefix (Faust adds the app id).

    Two deployments on one data directory (another prefix, or another app id) never share
    local state, so a store never mirrors topics other than its own.
    """
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", settings.prefix) or "_"
    directory = Path(settings.data_dir) / slug
    directory.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    return directory


def default_instance_id(settings: WorkerSettings) -> str:
    """The static member id of a worker: host name, web port and app id."""
    return f"{socket.gethostname()}:{settings.web_port}:{settings.app}"


def _http_client(connections: int) -> aiohttp.ClientSession:
    """The worker's HTTP client session: at most `connections` open at once."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections))


def build_app(settings: WorkerSettings) -> Pipeline:
    """Create the Faust app, its topics and its changelog-backed tables."""
    names = TopicNames(settings.prefix)
    security = client_security()
    register_store()
    register_transport()
    app = faust.App(
        settings.app,
        broker=broker_url(settings.bootstrap),
        store=store_url(settings.store),
        datadir=str(state_dir(settings)),
        processing_guarantee=settings.guarantee,
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        topic_allow_declare=True,
        table_standby_replicas=settings.standby_replicas,
        broker_commit_interval=settings.commit_interval_s,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=settings.heartbeat_interval_s,
        consumer_group_instance_id=settings.instance_id or default_instance_id(settings),
        web_enabled=True,
        # only our own read pages are open (see claimwatch.worker.pages): Faust's raw table
        # values, cluster router, statistics, graph and performance pages stay off
        web_tables_enabled=False,
        web_router_enabled=False,
        web_stats_enabled=False,
        web_graph_enabled=False,
        web_metrics_enabled=False,
        # the one session pages are forwarded through (`app.http_client`, made on first
        # use, closed at stop), with room for as many requests as may wait on the owners
        HttpClient=functools.partial(_http_client, settings.max_waiters),
        web_port=settings.web_port,
        web_bind=settings.web_bind or settings.web_host,
        web_host=settings.web_host,
        canonical_url=f"http://{settings.web_host}:{settings.web_port}",
        producer_acks=-1,
        producer_max_request_size=settings.producer_max_request_bytes,
        consumer_auto_offset_reset="earliest",
        stream_wait_empty=False,
        broker_credentials=_credentials(security),
    )

    def topic(name: str, **extra: Any) -> Topic:
        return raw_topic(app, name, partitions=settings.partitions, **extra)

    claims = topic(names.claims)
    resolutions_topic = topic(names.resolutions, compacting=True)

    def changelogged(name: str, changelog: Any = None) -> Any:
        """A bytes -> bytes table over its own compacted changelog topic (or the one given)."""
        if changelog is None:
            changelog = topic(
                f"{names.prefix}{settings.app}.{name.replace('_', '-')}-changelog",
                compacting=True,
                internal=True,
            )
        return raw_table(app, name, changelog, settings.partitions)

    facts = changelogged("facts")
    resolutions = changelogged("resolutions", resolutions_topic)
    alerts_input = topic(names.alerts_input, internal=True)
    detectors = changelogged("detectors")
    verdicts_table = changelogged("verdicts")
    plans_table = changelogged("plans")
    plan_facts = changelogged("plan_facts")
    docs = changelogged("docs")
    return Pipeline(
        app=app,
        settings=settings,
        names=names,
        claims=claims,
        decisions=topic(names.decisions),
        conflicts=topic(names.conflicts),
        dlq=topic(names.dlq),
        alerts=raw_topic(app, names.alerts, partitions=1),
        facts=facts,
        resolutions=resolutions,
        alerts_input=alerts_input,
        detectors=detectors,
        verdicts=topic(names.verdicts),
        verdicts_decisions=topic(names.verdicts_decisions),
        verdicts_table=verdicts_table,
        plans_table=plans_table,
        plan_facts=plan_facts,
        publish=topic(names.publish),
        publish_results=topic(names.publish_results),
        docs=docs,
    )
