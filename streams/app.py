"""The Faust app of a worker: its topics and tables, built from the settings (no logic here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import faust

from streams.settings import WorkerSettings, client_security
from streams.topics import TopicNames


@dataclass(slots=True)
class Pipeline:
    """The app with its topics and tables."""

    app: faust.App
    settings: WorkerSettings
    names: TopicNames
    claims: Any
    decisions: Any
    conflicts: Any
    dlq: Any
    alerts: Any
    facts: Any
    resolutions: Any
    alerts_input: Any
    detectors: Any
    verdicts: Any
    verdicts_decisions: Any
    verdicts_table: Any
    plans_table: Any = None
    plan_facts: Any = None
    publish: Any = None
    publish_results: Any = None
    docs: Any = None


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


def build_app(settings: WorkerSettings) -> Pipeline:
    """Create the Faust app, its topics and its changelog-backed tables."""
    names = TopicNames(settings.prefix)
    security = client_security()
    app = faust.App(
        settings.app_id,
        broker=f"kafka://{settings.bootstrap}",
        store=settings.store,
        datadir=str(settings.data_dir),
        processing_guarantee=settings.guarantee,
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        topic_allow_declare=True,
        table_standby_replicas=0,
        broker_commit_interval=settings.commit_interval_s,
        web_enabled=True,
        web_port=settings.web_port,
        web_bind=settings.web_host,
        web_host=settings.web_host,
        canonical_url=f"http://{settings.web_host}:{settings.web_port}",
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        stream_wait_empty=False,
        broker_credentials=_credentials(security),
    )

    def raw_topic(name: str, **extra: Any) -> Any:
        return app.topic(
            name,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=settings.partitions,
            **extra,
        )

    claims = raw_topic(names.claims)
    resolutions_topic = raw_topic(names.resolutions, compacting=True)
    raw: Any = faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )

    def changelogged(name: str, changelog: Any = None) -> Any:
        """A bytes -> bytes table over its own compacted changelog topic (or the one given)."""
        if changelog is None:
            changelog = raw_topic(
                f"{names.prefix}{settings.app_id}.{name.replace('_', '-')}-changelog",
                compacting=True,
                internal=True,
            )
        return app.Table(
            name, schema=raw, partitions=settings.partitions, changelog_topic=changelog
        )

    facts = changelogged("facts")
    resolutions = changelogged("resolutions", resolutions_topic)
    alerts_input = raw_topic(names.alerts_input, internal=True)
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
        decisions=raw_topic(names.decisions),
        conflicts=raw_topic(names.conflicts),
        dlq=raw_topic(names.dlq),
        alerts=app.topic(
            names.alerts,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=1,
        ),
        facts=facts,
        resolutions=resolutions,
        alerts_input=alerts_input,
        detectors=detectors,
        verdicts=raw_topic(names.verdicts),
        verdicts_decisions=raw_topic(names.verdicts_decisions),
        verdicts_table=verdicts_table,
        plans_table=plans_table,
        plan_facts=plan_facts,
        publish=raw_topic(names.publish),
        publish_results=raw_topic(names.publish_results),
        docs=docs,
    )
