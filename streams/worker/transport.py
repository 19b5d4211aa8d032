"""The worker's Kafka transport: Faust's aiokafka driver, its fetches waiting at most 50 ms.

Faust's driver builds its consumer with `fetch_max_wait_ms=1500`, and aiokafka keeps one
fetch in flight per broker, leaving out the partitions whose records it still holds. So
when a worker has just taken a batch of claims, its next fetch may name only partitions
with nothing new (the idle input topics, the partitions it is still working through), and
the broker parks that fetch for up to 1.5 s while claims arrive behind it: a paced worker
that is not busy shows claim-to-decision latencies of one to two seconds. With a 50 ms
wait a parked fetch costs at most that (and an idle worker sends about 20 small fetches a
second). The worker and the benchmark's Faust floor name this transport's scheme.
"""

from __future__ import annotations

from typing import Any, Final

from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread, Consumer, Transport

#: The broker URL scheme of this transport (`claimwatch-kafka://host:port`).
SCHEME: Final = "claimwatch-kafka"
#: The longest a fetch waits at the broker for records (ms; Faust's driver sets 1,500).
FETCH_MAX_WAIT_MS: Final = 50


def broker_url(bootstrap: str) -> str:
    """The Faust broker URL of a bootstrap list (`host:port[,host:port...]`)."""
    return f"{SCHEME}://{bootstrap}"


def register() -> None:
    """Make the scheme known to Faust's transport registry (idempotent)."""
    TRANSPORTS.aliases[SCHEME] = f"{__name__}:ShortWaitTransport"


class ShortWaitConsumerThread(AIOKafkaConsumerThread):
    """Faust's consumer thread, its worker consumer fetching with a short broker wait."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # read by aiokafka when the consumer starts and builds its fetcher (Faust passes
        # a literal, so there is no setting to give it); a test checks the fetcher has it
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class ShortWaitConsumer(Consumer):
    """Faust's aiokafka consumer over `ShortWaitConsumerThread`."""

    def _new_consumer_thread(self) -> AIOKafkaConsumerThread:
        return ShortWaitConsumerThread(self, loop=self.loop, beacon=self.beacon)


class ShortWaitTransport(Transport):
    """Faust's aiokafka transport with `ShortWaitConsumer`."""

    Consumer = ShortWaitConsumer
