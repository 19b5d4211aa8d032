"""What a new user meets when something is wrong: each error says what it is and what to do.

The worker is a stand-in HTTP server on the test's loop (or a closed port); the broker a
closed port. The claims are handed to a recording stand-in publisher: these tests are
about the worker side (the broker side is tests/integration/test_dlq_kafka.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from claimwatch import BrokerUnavailable, Client, DecisionTimeout, Publisher, WorkerUnavailable
from claimwatch.client.facts import FactPages, checked_worker_url
from claimwatch.client.publisher import InvalidClaim, validate
from claimwatch.wire.codec import MAX_CLAIM_BYTES
from claimwatch.wire.topics import TopicNames

from tests.support.kafka import free_port

CLAIM = {
    "claim_id": "c1",
    "subject": "invoice:7",
    "field": "payment_status",
    "source": "billing-api",
    "observed_at": "2026-09-14T09:12:00Z",
    "status": "ok",
    "value": "paid",
}
DECISION = {"decision_id": "dec_1", "claims": [{"claim_id": "c1", "disposition": "won"}]}
CLOSED = "127.0.0.1:1"


class Recorder:
    """Stands in for `Publisher`: keeps what `decide` sends (no broker in a unit test)."""

    def __init__(self) -> None:
        self.names = TopicNames("unit.")
        self.bootstrap = CLOSED
        self.signing_key: bytes | None = None
        self.signing_kid: str | None = None
        self.sent: list[tuple[bytes, bytes]] = []

    async def send(self, key: bytes, value: bytes) -> None:
        self.sent.append((key, value))

    async def flush(self) -> None:
        return None


@contextlib.asynccontextmanager
async def client_at(url: str) -> AsyncIterator[tuple[Client, Recorder]]:
    """A `Client` of `url` whose claims go to a `Recorder`."""
    client = Client(url, CLOSED)
    await client.publisher.__aexit__()  # made, never started: the recorder takes its place
    recorder = Recorder()
    client.publisher = recorder  # type: ignore[assignment]
    async with client.pages:
        yield client, recorder


Page = Callable[[web.Request], Any]


@contextlib.asynccontextmanager
async def worker_at(port: int, facts: Page) -> AsyncIterator[None]:
    """A stand-in worker on `port`: /health answers 200, /facts as `facts` says."""

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/facts/{subject}/{field}", facts)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("127.0.0.1:6066", "has no http:// or https:// scheme"),
        ("localhost:6066", "has no http:// or https:// scheme"),
        ("htp://x", "has the scheme 'htp', not http or https"),
        ("", "is empty"),
        ("http://", "names no host"),
        ("http://h:port", "cannot be read"),
        ("http://h:6066/?a=1", "has a query or fragment"),
    ],
)
def test_a_malformed_worker_url_is_refused_when_the_client_is_made(url: str, problem: str) -> None:
    """Refused by `Client(...)` itself, before any producer or connection is made."""
    with pytest.raises(ValueError) as caught:
        Client(url, CLOSED)
    message = str(caught.value)
    assert (f"worker URL {url!r} {problem}", True) == (
        message[: len(f"worker URL {url!r} {problem}")],
        "a valid one looks like http://127.0.0.1:6066" in message,
    )
    with pytest.raises(ValueError, match="a valid one looks like"):
        FactPages(url)


def test_a_url_without_scheme_suggests_the_one_meant() -> None:
    with pytest.raises(ValueError, match=r"did you mean http://127\.0\.0\.1:6066\?"):
        checked_worker_url("127.0.0.1:6066")


def test_a_malformed_url_from_the_environment_is_named_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAIMWATCH_WORKER_URL", "worker:6066")
    with pytest.raises(ValueError, match=r"^CLAIMWATCH_WORKER_URL 'worker:6066' has no http"):
        FactPages()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:6066/", "http://127.0.0.1:6066"),
        ("https://worker.example", "https://worker.example"),
        ("http://[::1]:6066", "http://[::1]:6066"),
        ("http://gateway/claimwatch/", "http://gateway/claimwatch"),
    ],
)
def test_a_valid_url_is_kept(url: str, expected: str) -> None:
    assert expected == checked_worker_url(url)


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("http://127.0.0.1:{port}", "Connect call failed"),
        ("http://claimwatch-worker.invalid:6066", ""),
    ],
)
async def test_a_down_worker_is_worker_unavailable_at_once(url: str, cause: str) -> None:
    """Nothing listening, or a host that does not resolve: told at once, nothing sent."""
    url = url.format(port=free_port())
    began = time.monotonic()
    async with client_at(url) as (client, recorder):
        with pytest.raises(WorkerUnavailable) as caught:
            await client.decide([CLAIM], timeout=30)
    took = time.monotonic() - began
    message = str(caught.value)
    assert (True, [], False) == (took < 5, recorder.sent, caught.value.connected)
    assert message.startswith(f"no worker at {url} (")
    assert cause in message
    assert "claimwatch worker" in message
    assert "CLAIMWATCH_WORKER_URL" in message


async def test_a_worker_that_goes_away_during_a_wait_is_asked_again() -> None:
    """Once a worker has answered, an outage (a restart) is retried until the timeout."""
    port = free_port()
    asked: list[str] = []

    async def not_yet(_request: web.Request) -> web.Response:
        asked.append("408")
        return web.json_response({"error": "no decision covers c1 yet"}, status=408)

    async def decided(_request: web.Request) -> web.Response:
        asked.append("200")
        return web.json_response(DECISION)

    async with client_at(f"http://127.0.0.1:{port}") as (client, _):
        async with worker_at(port, not_yet):
            await client.pages.probe()  # the worker answers once, then restarts
        deciding = asyncio.create_task(client.decide([CLAIM], timeout=20))
        await asyncio.sleep(1.0)  # asked while nothing listens: retried, not raised
        assert not deciding.done()
        async with worker_at(port, decided):
            decisions = await deciding
    assert ({"invoice:7|payment_status": DECISION}, ["200"]) == (decisions, asked)


async def test_a_timeout_says_when_the_dead_letters_cannot_be_read() -> None:
    """The lookup is a hint: a broker that cannot be read is named, the timeout stays."""
    port = free_port()

    async def never(request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.query["wait"]))
        return web.json_response({"error": "no decision covers c1 yet"}, status=408)

    async with worker_at(port, never), client_at(f"http://127.0.0.1:{port}") as (client, _):
        with pytest.raises(DecisionTimeout) as caught:
            await client.decide([CLAIM], timeout=0.5)
    message = str(caught.value)
    assert ({}, {"invoice:7|payment_status": ["c1"]}) == (
        caught.value.dead_lettered,
        caught.value.pending,
    )
    assert message.startswith("no decision within 0.5 s for 1 fact(s); invoice:7|payment_status")
    assert "The dead-letter topic could not be read" in message


async def test_an_unreachable_broker_is_broker_unavailable_at_once() -> None:
    began = time.monotonic()
    with pytest.raises(BrokerUnavailable) as caught:
        async with Publisher(CLOSED, "unit."):
            pass
    assert time.monotonic() - began < 5
    assert str(caught.value).startswith(f"no Kafka broker answered at {CLOSED}. Start one")
    assert "CLAIMWATCH_BOOTSTRAP" in str(caught.value)


def test_a_claim_larger_than_a_worker_reads_is_refused_before_sending() -> None:
    big = {**CLAIM, "value": "x" * MAX_CLAIM_BYTES}
    with pytest.raises(InvalidClaim, match=f"exceeds the {MAX_CLAIM_BYTES}-byte limit"):
        validate(big)
