"""The check-side sender of verdict signals: one check's say about one request, to `verdicts`.

    async with VerdictPublisher(bootstrap, prefix) as publisher:
        await publisher.send(signal)          # returns once the broker has it

A signal is keyed by its request id, so every signal of a request lands on one partition
and a worker decides the request as soon as its expected checks have arrived (or at the
policy's timeout without them). The worker writes the decision to `verdicts.decisions`.
"""

from __future__ import annotations

from typing import Any

import orjson

from claimwatch.models.verdict import VerdictSignal
from claimwatch.wire import kafka
from claimwatch.wire.kafka import env_bootstrap, env_prefix
from claimwatch.wire.topics import TopicNames, start_for


def encoded(signal: VerdictSignal) -> tuple[bytes, bytes]:
    """(key, value) of one signal as a worker reads it: the request id, the signal's JSON."""
    value = orjson.dumps(signal.model_dump(mode="json", exclude_none=True))
    return signal.request_id.encode(), value


class VerdictPublisher:
    """Sends verdict signals (aiokafka); use as `async with VerdictPublisher() as pub:`."""

    def __init__(self, bootstrap: str | None = None, prefix: str | None = None, **producer: Any):
        self.names = TopicNames(prefix if prefix is not None else env_prefix())
        #: the broker's address (`bootstrap`, else CLAIMWATCH_BOOTSTRAP, else the local one)
        self.bootstrap = bootstrap or env_bootstrap()
        self._producer = kafka.producer(bootstrap, **producer)

    async def __aenter__(self) -> VerdictPublisher:
        """Start sending; `MissingTopic` when the verdicts topic is absent (nothing is created).

        `BrokerUnavailable` at once when no broker answers at the bootstrap address.
        """
        await start_for(self._producer, self.bootstrap, self.names.prefix, [self.names.verdicts])
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def send(self, signal: VerdictSignal) -> None:
        """Send one signal and wait until the broker has acknowledged it."""
        await self.send_record(*encoded(signal))

    async def send_record(self, key: bytes, value: bytes) -> None:
        """Send one encoded signal (`encoded`) and wait for the broker's acknowledgement."""
        await self._producer.send_and_wait(self.names.verdicts, value, key=key)
