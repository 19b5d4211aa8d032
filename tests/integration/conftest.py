"""Fixtures for the integration tests: a real Apache Kafka broker and fresh topics on it."""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import socket
import subprocess
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.support.kafka import TopicFactory

REPO = Path(__file__).resolve().parents[2]
KAFKA_SH = REPO / "compose" / "kafka.sh"
#: compose/kafka.sh's own broker: its port is CLAIMWATCH_KAFKA_PORT, as for the script
LOCAL_PORT = os.environ.get("CLAIMWATCH_KAFKA_PORT") or "9092"
LOCAL_BOOTSTRAP = f"127.0.0.1:{LOCAL_PORT}"
LOCAL_ADDRESSES = (LOCAL_BOOTSTRAP, f"localhost:{LOCAL_PORT}")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: the image of the Docker path: the 4.x release compose/kafka.sh provisions by default
KAFKA_IMAGE = "apache/kafka:4.4.0"


def _docker_answers() -> bool:
    """True when a Docker engine answers a ping (not merely when the client is installed)."""
    if not os.environ.get("DOCKER_HOST") and not Path("/var/run/docker.sock").exists():
        return False
    # docker-py leaks the socket of a refused connection; keep its ResourceWarning out of tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            import docker

            client = docker.from_env(timeout=5)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:
            return False
        finally:
            gc.collect()


def _apache_kafka_container(image: str) -> Any:
    """A testcontainers KafkaContainer running the official apache/kafka image in KRaft mode."""
    # KafkaContainer's own KRaft mode scripts Confluent's cp-kafka image (and with_kraft()
    # rejects apache/kafka tags), so configure apache/kafka through its KAFKA_* environment.
    from testcontainers.community.kafka import KafkaContainer

    class ApacheKafkaContainer(KafkaContainer):
        def configure(self) -> None:
            self.kraft_enabled = True
            self.wait_for = re.compile(r".*Kafka Server started.*")
            for key, value in {
                "CLUSTER_ID": "Y2xhaW13YXRjaC10ZXN0cw",
                "KAFKA_NODE_ID": "1",
                "KAFKA_PROCESS_ROLES": "broker,controller",
                "KAFKA_LISTENERS": f"{self.listeners},CONTROLLER://0.0.0.0:9094",
                "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
                    f"{self.security_protocol_map},CONTROLLER:PLAINTEXT"
                ),
                "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
                "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
                "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
                "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
                "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "1",
                "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
            }.items():
                self.with_env(key, value)

        def tc_start(self) -> None:
            host = self.get_container_host_ip()
            port = self.get_exposed_port(self.port)
            script = (
                "#!/bin/sh\n"
                f"export KAFKA_ADVERTISED_LISTENERS={self.listener_name}://{host}:{port},"
                "BROKER://$(hostname -i | cut -d' ' -f1):9092\n"
                "exec /etc/kafka/docker/run\n"
            )
            self.create_file(script.encode(), KafkaContainer.TC_START_SCRIPT)

    return ApacheKafkaContainer(image)


def _local_broker(why: str) -> str:
    """Start (or reuse) the local broker with compose/kafka.sh and return its address."""
    env = {**os.environ}
    env.pop("CLAIMWATCH_BOOTSTRAP", None)
    try:
        proc = subprocess.run(
            [str(KAFKA_SH), "up"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"no Kafka broker: `compose/kafka.sh up` could not run: {exc}", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(
            f"no Kafka broker: {why}, and `compose/kafka.sh up` failed (exit {proc.returncode}):"
            f"\n{proc.stdout}{proc.stderr}",
            pytrace=False,
        )
    return LOCAL_BOOTSTRAP


def _split(bootstrap: str) -> tuple[str, int] | None:
    """(host, port) of the first server of a bootstrap list, or None when it has no port."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return (host, int(port)) if host and port.isdigit() else None


def _require_listener(bootstrap: str) -> None:
    """Fail the session at once when nothing listens at a configured loopback broker."""
    address = _split(bootstrap)
    if address is None or address[0] not in LOOPBACK_HOSTS:
        return
    try:
        socket.create_connection(address, timeout=5).close()
    except OSError as exc:
        port = address[1]
        pytest.fail(
            f"no Kafka broker: CLAIMWATCH_BOOTSTRAP={bootstrap}, but nothing answers there"
            f" ({exc}); start one with `CLAIMWATCH_KAFKA_PORT={port} compose/kafka.sh up"
            " [VERSION]`",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """The "host:port" of a real broker: CLAIMWATCH_BOOTSTRAP, else a container, else local.

    The default local address starts compose/kafka.sh's broker; any other address (another
    port, e.g. a second compose/kafka.sh broker of another version) is used as it is.
    """
    configured = os.environ.get("CLAIMWATCH_BOOTSTRAP")
    if configured in LOCAL_ADDRESSES:
        _local_broker(f"CLAIMWATCH_BOOTSTRAP={configured} (the local broker)")
    if configured:
        _require_listener(configured)
        yield configured
        return
    if _docker_answers():
        container = _apache_kafka_container(KAFKA_IMAGE)
        try:
            container.start(timeout=120)
        except Exception as exc:
            with contextlib.suppress(Exception):
                container.stop()
            pytest.fail(f"no Kafka broker: {KAFKA_IMAGE} did not start: {exc}", pytrace=False)
        try:
            yield container.get_bootstrap_server()
        finally:
            container.stop()
        return
    yield _local_broker("CLAIMWATCH_BOOTSTRAP is unset and no Docker engine answers")


@pytest.fixture
async def fresh_topic(kafka_bootstrap: str) -> AsyncIterator[TopicFactory]:
    """A factory creating uniquely named topics (replication factor 1), deleted afterwards."""
    created: list[str] = []

    async def create(prefix: str = "claimwatch-test", partitions: int = 1) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic(name, num_partitions=partitions, replication_factor=1)]
            )
        finally:
            await admin.close()
        created.append(name)
        return name

    yield create

    if created:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            await admin.delete_topics(created)
        finally:
            await admin.close()


def _local_broker_pid(bootstrap: str) -> int | None:
    """The pid of the broker compose/kafka.sh started at `bootstrap` (any version), or None."""
    address = _split(bootstrap)
    if address is None or address[0] not in LOOPBACK_HOSTS:
        return None
    env = {**os.environ, "CLAIMWATCH_KAFKA_PORT": str(address[1])}
    env.pop("CLAIMWATCH_BOOTSTRAP", None)
    proc = subprocess.run(
        [str(KAFKA_SH), "pid"], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    pid = proc.stdout.strip()
    return int(pid) if proc.returncode == 0 and pid.isdigit() else None


@pytest.fixture
def broker_pause(
    kafka_bootstrap: str,
) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """An async context that freezes the local broker (SIGSTOP) and thaws it (SIGCONT) on exit.

    Only a broker compose/kafka.sh started (on any port) can be paused; with any other
    broker the test fails.
    """
    pid = _local_broker_pid(kafka_bootstrap)
    if pid is None:
        pytest.fail(f"cannot pause the broker at {kafka_bootstrap}: not compose/kafka.sh's")

    @contextlib.asynccontextmanager
    async def paused() -> AsyncIterator[None]:
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    return paused
