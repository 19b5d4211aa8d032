"""Kafka client settings shared by every client: CLAIMWATCH_* variables, then defaults."""

from __future__ import annotations

import os
import ssl
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
        context = ssl.create_default_context(cafile=cafile or None)
        cert, key = (
            os.environ.get("CLAIMWATCH_SSL_CERTFILE"),
            os.environ.get("CLAIMWATCH_SSL_KEYFILE"),
        )
        if cert:
            context.load_cert_chain(cert, key)
        settings["ssl_context"] = context
    return settings
