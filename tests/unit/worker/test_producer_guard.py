"""The producer guard: a record Faust's producer buffer cannot send is reported, and it goes on.

Issue 40, item 9: a table value over the producer's request limit raised in Faust's
producer buffer task, outside every agent, and the process exited. With the guard the
buffer (a real `ProducerBuffer`, its own task) drops that one record, counts it in
`claimwatch_producer_errors_total{topic}`, notes it on the DLQ, and sends the next ones.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from aiokafka.errors import MessageSizeTooLargeError
from claimwatch.core.policy import CompiledPolicy
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.app import build_app
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.producer_guard import (
    NOTE_HEADROOM,
    install_producer_guard,
    request_limit,
    within,
)
from claimwatch.worker.settings import WorkerSettings
from faust.exceptions import ProducerSendError
from faust.transport.producer import ProducerBuffer
from faust.types.tuples import FutureMessage, PendingMessage

from tests.support.paths import EXAMPLE_POLICY

NAMES = TopicNames("t.")
TOPIC = "t.app.plans-changelog"


class Channel:
    """A topic that publishes every record but the one keyed `refused`, which raises `error`."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.published: list[bytes] = []

    def get_topic_name(self) -> str:
        return TOPIC

    async def publish_message(self, fut: FutureMessage, wait: bool = False) -> None:
        if fut.message.key == b"refused":
            raise self.error
        self.published.append(fut.message.key)
        fut.set_result(None)  # type: ignore[arg-type]


class Producer:
    """What the guard sends its DLQ note through (`app.producer.send`)."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        partition: int | None,
        timestamp: float | None,
        headers: list[tuple[str, bytes]],
    ) -> None:
        self.sent.append(Outgoing(topic, key, value, partition, tuple(headers)))


class App:
    """The parts of a Faust app the buffer and the guard use."""

    def __init__(self, limit: int = 1_000_000) -> None:
        self.conf = SimpleNamespace(producer_threaded=False, producer_max_request_size=limit)
        self.producer = Producer()


def message(channel: Channel, key: bytes, size: int = 10) -> FutureMessage:
    pending = PendingMessage(channel, key, b"v" * size, 2, None, None, "raw", "raw", None)  # type: ignore[arg-type]
    return FutureMessage(pending)


@pytest.mark.parametrize(
    "error",
    [
        MessageSizeTooLargeError("The message is 1500000 bytes when serialized"),
        ProducerSendError("Error while sending: MessageSizeTooLargeError()"),
    ],
    ids=["aiokafka's refusal", "Faust's wrapped refusal"],
)
async def test_a_refused_record_is_counted_noted_and_the_buffer_goes_on(
    policy: CompiledPolicy, error: Exception
) -> None:
    """Three table writes, the middle one refused: the other two are sent, after it too."""
    app, metrics, channel = App(), Metrics(policy), Channel(error)
    install_producer_guard(app, NAMES, metrics)
    buffer = ProducerBuffer()
    buffer.app = app  # type: ignore[assignment]
    futures = [message(channel, b"first"), message(channel, b"refused", 1500), None]
    await buffer.start()
    try:
        for fut in futures[:2]:
            buffer.put(fut)  # type: ignore[arg-type]
        await asyncio.wait_for(buffer.flush(), 5.0)
        futures[2] = message(channel, b"after")
        buffer.put(futures[2])
        await asyncio.wait_for(buffer.flush(), 5.0)
        running = buffer.state
    finally:
        await buffer.stop()

    assert [b"first", b"after"] == channel.published
    assert "running" == running
    refused = futures[1]
    assert refused is not None and refused.done() and refused.exception() is error
    assert 1.0 == metrics.registry.get_sample_value(
        "claimwatch_producer_errors_total", {"topic": TOPIC}
    )
    (note,) = app.producer.sent
    headers = dict(note.headers)
    assert (NAMES.dlq, b"refused", b"v" * 1500) == (note.topic, note.key, note.value)
    reason = headers["claimwatch.reason"].decode()
    assert reason.startswith(f"producer_refused: {type(error).__name__}: "), reason
    assert (TOPIC.encode(), b"2") == (headers["claimwatch.topic"], headers["claimwatch.partition"])


async def test_a_buffer_of_an_app_without_a_guard_still_raises(policy: CompiledPolicy) -> None:
    """The class-wide replacement changes nothing for an app that installed no guard."""
    buffer = ProducerBuffer()
    buffer.app = App()  # type: ignore[assignment]
    fut = message(Channel(MessageSizeTooLargeError("too large")), b"refused")
    with pytest.raises(MessageSizeTooLargeError):
        await buffer._send_pending(fut)


def test_a_note_is_cut_to_fit_the_producers_limit() -> None:
    """Under a lowered limit the note of a refused 200 kB record fits, and says it was cut."""
    app = App(limit=100_000)
    note = Outgoing(NAMES.dlq, b"k", b"x" * 200_000, 0, (("claimwatch.reason", b"r"),))
    cut = within(note, app.conf.producer_max_request_size - NOTE_HEADROOM)
    headers = dict(cut.headers)
    assert 100_000 - NOTE_HEADROOM == len(cut.key or b"") + len(cut.value)
    assert (b"true", b"200000") == (
        headers["claimwatch.truncated"],
        headers["claimwatch.original_size"],
    )
    assert note == within(note, 300_000)


@pytest.mark.parametrize(
    ("env", "expected"),
    [(None, 1_000_000), ("100000", 100_000), ("16777216", 16 * 1024 * 1024)],
)
def test_the_producers_limit_is_a_setting_faust_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None, expected: int
) -> None:
    """`CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES` (default Faust's 1,000,000) reaches the app."""
    if env is None:
        monkeypatch.delenv("CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES", raising=False)
    else:
        monkeypatch.setenv("CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES", env)
    settings = WorkerSettings(policy_path=EXAMPLE_POLICY, data_dir=tmp_path)
    app = build_app(settings).app
    assert (expected, expected) == (
        settings.producer_max_request_bytes,
        app.conf.producer_max_request_size,
    )
    assert expected == request_limit(app)


@pytest.mark.parametrize("env", ["1000", "99999999", "1e6", "-5"])
def test_a_producer_limit_out_of_range_stops_the_worker_with_its_name(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: str
) -> None:
    """Exit 2 and a message naming the variable and the range, never a traceback."""
    monkeypatch.setenv("CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES", env)
    with pytest.raises(SystemExit) as stopped:
        WorkerSettings(policy_path=EXAMPLE_POLICY)
    assert 2 == stopped.value.code
    assert "CLAIMWATCH_PRODUCER_MAX_REQUEST_BYTES" in capsys.readouterr().err
