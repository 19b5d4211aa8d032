"""The worker's Kafka transport: Faust's aiokafka driver, a fetch waiting 50 ms or for 16 KiB.

Faust's driver builds its consumer with `fetch_max_wait_ms=1500`, and aiokafka keeps one
fetch in flight per broker, leaving out the partitions whose records it still holds. So
when a worker has just taken a batch of claims, its next fetch may name only partitions
with nothing new (the idle input topics, the partitions it is still working through), and
the broker parks that fetch for up to 1.5 s while claims arrive behind it: a worker that
is not busy would show claim-to-decision latencies of one to two seconds. With a 50 ms
wait a parked fetch costs at most that (and an idle worker sends about 20 small fetches a
second).

A fetch also asks the broker for at least 16 KiB (aiokafka's default is one byte): with
one byte, a worker under steady traffic sends a fetch for every few records, and
encoding, decoding and handing each one across from Faust's consumer thread takes much
of its CPU. The broker answers when 16 KiB have come, or after the 50 ms wait: less CPU
a claim, for a claim-to-decision latency a little longer (`make bench` reports both;
figures: docs/performance.md). A backlog fills 16 KiB at once. The worker and the
benchmark's Faust floor name this transport's scheme.
"""

from __future__ import annotations

from typing import Any, Final

from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers.aiokafka import Transport

from claimwatch.worker.faust_private import ConsumerHooks, ConsumerThreadHooks, set_fetch_limits

#: The broker URL scheme of this transport (`claimwatch-kafka://host:port`).
SCHEME: Final = "claimwatch-kafka"
#: The longest a fetch waits at the broker for records (ms; Faust's driver sets 1,500).
FETCH_MAX_WAIT_MS: Final = 50
#: The least a fetch asks for before the broker answers it earlier than the wait (bytes).
FETCH_MIN_BYTES: Final = 16_384


def broker_url(bootstrap: str) -> str:
    """The Faust broker URL of a bootstrap list (`host:port[,host:port...]`)."""
    return f"{SCHEME}://{bootstrap}"


def register() -> None:
    """Make the scheme known to Faust's transport registry (idempotent)."""
    TRANSPORTS.aliases[SCHEME] = f"{__name__}:ShortWaitTransport"


class ShortWaitConsumerThread(ConsumerThreadHooks):
    """Faust's consumer thread, its worker consumer fetching with a short broker wait."""

    def worker_consumer_made(self, consumer: Any) -> None:
        # Faust passes a literal for the wait and nothing for the size, so there is no
        # setting to give them; a test checks the fetcher has both
        set_fetch_limits(consumer, FETCH_MAX_WAIT_MS, FETCH_MIN_BYTES)


class ShortWaitConsumer(ConsumerHooks):
    """Faust's aiokafka consumer over `ShortWaitConsumerThread`."""

    thread_class = ShortWaitConsumerThread


class ShortWaitTransport(Transport):
    """Faust's aiokafka transport with `ShortWaitConsumer`."""

    Consumer = ShortWaitConsumer
