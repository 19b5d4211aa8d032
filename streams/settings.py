"""Worker and client settings: flags first, then CLAIMWATCH_* variables, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_PREFIX = "claimwatch."


def env_bootstrap() -> str:
    """CLAIMWATCH_BOOTSTRAP, else the local broker."""
    return os.environ.get("CLAIMWATCH_BOOTSTRAP") or DEFAULT_BOOTSTRAP


def env_prefix() -> str:
    """CLAIMWATCH_TOPIC_PREFIX, else `claimwatch.`."""
    return os.environ.get("CLAIMWATCH_TOPIC_PREFIX", DEFAULT_PREFIX)


def client_security() -> dict[str, Any]:
    """Aiokafka security settings passed through from CLAIMWATCH_SECURITY_PROTOCOL and friends."""
    mapping = {
        "CLAIMWATCH_SECURITY_PROTOCOL": "security_protocol",
        "CLAIMWATCH_SASL_MECHANISM": "sasl_mechanism",
        "CLAIMWATCH_SASL_USERNAME": "sasl_plain_username",
        "CLAIMWATCH_SASL_PASSWORD": "sasl_plain_password",
    }
    settings: dict[str, Any] = {v: os.environ[k] for k, v in mapping.items() if os.environ.get(k)}
    cafile = os.environ.get("CLAIMWATCH_SSL_CAFILE")
    tls = str(settings.get("security_protocol", "")).upper() in ("SSL", "SASL_SSL")
    if cafile or tls:  # aiokafka needs a context for SSL; without a CA file: the system's CAs
        import ssl

        context = ssl.create_default_context(cafile=cafile or None)
        cert, key = (
            os.environ.get("CLAIMWATCH_SSL_CERTFILE"),
            os.environ.get("CLAIMWATCH_SSL_KEYFILE"),
        )
        if cert:
            context.load_cert_chain(cert, key)
        settings["ssl_context"] = context
    return settings


@dataclass(slots=True)
class WorkerSettings:
    """Everything a worker needs to start."""

    policy_path: Path
    bootstrap: str = field(default_factory=env_bootstrap)
    prefix: str = field(default_factory=env_prefix)
    partitions: int = 4
    web_port: int = 6066
    web_host: str = "127.0.0.1"
    app_id: str = "claimwatch"
    store: str = "rocksdb://"
    data_dir: Path = Path(".cache/worker")
    #: Faust's exactly_once stalls on our tick records (see README): at-least-once + dedupe.
    guarantee: str = "at_least_once"
    tick_interval_s: float = 1.0
    lateness_s: float = 1.0
    commit_interval_s: float = 1.0
    log_level: str = field(
        default_factory=lambda: os.environ.get("CLAIMWATCH_LOG_LEVEL", "warning")
    )
    #: records an agent takes at once, and how long it waits to fill a batch: Faust's
    #: per-record consumer path (one ack and wake-up each) costs more than our step
    #: largest policy file accepted (see streams.policy_file.MAX_POLICY_BYTES)
    max_policy_bytes: int = 1024 * 1024
    #: standby copies of each table partition kept warm on other workers (Faust's
    #: table_standby_replicas): a moved partition is then restored from the changelog tail
    standby_replicas: int = 0
    #: /health answers 503 once the broker has not answered for this long
    health_broker_timeout_s: float = 30.0
    #: static group membership (KIP-345): a restarted worker with the same id takes its
    #: partitions back at once instead of waiting for its old session to time out.
    #: Default: host name and web port, stable across restarts and unique per host and port.
    instance_id: str | None = None
    #: a member that stops heartbeating is dropped after this long (Faust's default is 60 s)
    session_timeout_s: float = 10.0
    heartbeat_interval_s: float = 1.0
    batch_max: int = field(
        default_factory=lambda: int(os.environ.get("CLAIMWATCH_BATCH_MAX", "500"))
    )
    batch_within_s: float = field(
        default_factory=lambda: float(os.environ.get("CLAIMWATCH_BATCH_WITHIN_MS", "10")) / 1000
    )
