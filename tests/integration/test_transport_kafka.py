"""The worker's transport: its consumer's fetcher waits 50 ms at the broker, not Faust's 1.5 s."""

from __future__ import annotations

from pathlib import Path

import faust
import pytest

from streams.worker.transport import FETCH_MAX_WAIT_MS, ShortWaitTransport, broker_url, register

pytestmark = pytest.mark.kafka


async def test_the_worker_consumers_fetcher_waits_briefly(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The consumer Faust builds through the transport starts a fetcher with the short wait."""
    register()
    app = faust.App("transport-test", broker=broker_url(kafka_bootstrap), datadir=str(tmp_path))
    consumer = app.consumer._thread._create_worker_consumer(app.transport)
    await consumer.start()
    try:
        fetcher_wait = consumer._fetcher._fetch_max_wait_ms
    finally:
        await consumer.stop()
    assert (ShortWaitTransport, 50, 50) == (type(app.transport), FETCH_MAX_WAIT_MS, fetcher_wait)
