"""The worker's transport: its fetcher waits 50 ms at the broker (not 1.5 s) or for 16 KiB."""

from __future__ import annotations

from pathlib import Path

import faust
import pytest
from claimwatch.worker.transport import (
    FETCH_MAX_WAIT_MS,
    FETCH_MIN_BYTES,
    ShortWaitTransport,
    broker_url,
    register,
)

pytestmark = pytest.mark.kafka


async def test_the_worker_consumers_fetcher_waits_briefly(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """The consumer Faust builds starts a fetcher with the short wait and the 16 KiB least."""
    register()
    app = faust.App("transport-test", broker=broker_url(kafka_bootstrap), datadir=str(tmp_path))
    consumer = app.consumer._thread._create_worker_consumer(app.transport)
    await consumer.start()
    try:
        fetcher = (consumer._fetcher._fetch_max_wait_ms, consumer._fetcher._fetch_min_bytes)
    finally:
        await consumer.stop()
    assert (ShortWaitTransport, (50, 16_384)) == (
        type(app.transport),
        (FETCH_MAX_WAIT_MS, FETCH_MIN_BYTES),
    )
    assert (50, 16_384) == fetcher
