"""Kafka clients of the deployment: settings from CLAIMWATCH_* variables, and client factories."""

from __future__ import annotations

import asyncio
import os
import ssl
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

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


def producer(bootstrap: str | None = None, **options: Any) -> AIOKafkaProducer:
    """A producer to the deployment's broker: acks from all replicas, idempotent.

    With the CLAIMWATCH_* security settings; `options` add to or override all of those.
    """
    return AIOKafkaProducer(
        **{
            "bootstrap_servers": bootstrap or env_bootstrap(),
            "acks": "all",
            "enable_idempotence": True,
            **client_security(),
            **options,
        }
    )


class Consumer(AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer, whose `start` lets its coordinator task take a first step.

    Without a group, `stop` cancels that task and awaits it, and a task cancelled before it
    ever ran raises CancelledError out of `stop`: a consumer stopped right after it started
    (an empty or a missing topic) ended the command with that traceback. One pass of the
    event loop after starting lets the task begin.
    """

    async def start(self) -> None:
        await super().start()
        await asyncio.sleep(0)


def consumer(bootstrap: str | None = None, **options: Any) -> AIOKafkaConsumer:
    """A reader of the deployment's topics: no group, no auto-commit, read_committed.

    It assigns and seeks itself; `options` add to or override those settings.
    """
    return Consumer(
        **{
            "bootstrap_servers": bootstrap or env_bootstrap(),
            "group_id": None,
            "enable_auto_commit": False,
            "isolation_level": "read_committed",
            **client_security(),
            **options,
        }
    )


def admin(bootstrap: str | None = None) -> AIOKafkaAdminClient:
    """An admin client of the deployment's broker (with the CLAIMWATCH_* security settings)."""
    return AIOKafkaAdminClient(bootstrap_servers=bootstrap or env_bootstrap(), **client_security())


async def topic_partitions(bootstrap: str | None, topic: str) -> list[int]:
    """The partitions of `topic`, asked of the broker; empty when the topic does not exist.

    Every topic is described: asking for this one by name would auto-create it on some
    brokers.
    """
    client = admin(bootstrap)
    await client.start()
    try:
        described = await client.describe_topics()
    finally:
        await client.close()
    return sorted(p["partition"] for t in described if t["topic"] == topic for p in t["partitions"])
