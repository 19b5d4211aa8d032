"""The per-record guard: a record whose handling raises is dead-lettered, the next goes on."""

from __future__ import annotations

import pytest
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.dead_letters import DLQ_MAX_BYTES, internal_error_reason
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.record_guard import RecordGuard

from tests.support.policies import policy_with

NAMES = TopicNames("g.")


class Sink:
    """Collects what the guard sends; can be told to fail."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[Outgoing] = []
        self.fail = fail

    async def __call__(self, out: Outgoing) -> None:
        if self.fail:
            raise RuntimeError("broker refused")
        self.sent.append(out)


def _record(offset: int, value: bytes | None = b"{}") -> Record:
    return Record("g.claims", 1, offset, b"k", value, None)


def _counter(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_raising_record_goes_to_the_dlq_and_the_next_is_handled() -> None:
    """Of three records the middle one raises: it is dead-lettered, the others handled."""
    sink, metrics = Sink(), Metrics(policy_with())
    guard = RecordGuard(NAMES, sink, metrics)
    handled: list[int] = []
    resets: list[int] = []

    async def handle(record: Record) -> None:
        if record.offset == 1:
            raise ValueError("boom")
        handled.append(record.offset)

    results = [await guard.run(_record(n), handle, resets.append) for n in range(3)]
    assert [True, False, True] == results
    assert [0, 2] == handled
    assert [1] == resets
    (dead,) = sink.sent
    headers = dict(dead.headers)
    assert (NAMES.dlq, b"k", b"{}") == (dead.topic, dead.key, dead.value)
    assert b"internal_error: ValueError: boom" == headers["claimwatch.reason"]
    assert (b"g.claims", b"1", b"1") == (
        headers["claimwatch.topic"],
        headers["claimwatch.partition"],
        headers["claimwatch.offset"],
    )
    assert 1.0 == _counter(metrics, "claimwatch_internal_errors_total", topic="g.claims")
    assert 1.0 == _counter(metrics, "claimwatch_dlq_messages_total", reason="internal_error")


async def test_failure_is_logged_once_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """One ERROR record naming the record's coordinates, with the exception attached."""
    guard = RecordGuard(NAMES, Sink(), Metrics(policy_with()))

    async def handle(record: Record) -> None:
        raise KeyError("x")

    await guard.run(_record(9), handle)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert 1 == len(errors)
    assert "g.claims[1]@9" in errors[0].getMessage()
    assert errors[0].exc_info is not None


async def test_a_tombstone_that_raises_is_dead_lettered_with_empty_bytes() -> None:
    """A record without a value still reaches the DLQ."""
    sink = Sink()
    guard = RecordGuard(NAMES, sink, Metrics(policy_with()))

    async def handle(record: Record) -> None:
        raise TypeError("no value")

    await guard.run(_record(0, None), handle)
    assert [b""] == [o.value for o in sink.sent]


async def test_a_huge_record_that_raises_is_dead_lettered_truncated() -> None:
    """The DLQ copy of a ~1 MB record fits the producer's limit."""
    sink = Sink()
    guard = RecordGuard(NAMES, sink, Metrics(policy_with()))

    async def handle(record: Record) -> None:
        raise ValueError("too much")

    await guard.run(_record(0, b"x" * 1_100_000), handle)
    (dead,) = sink.sent
    assert DLQ_MAX_BYTES >= len(dead.value) + len(dead.key or b"")
    assert b"true" == dict(dead.headers)["claimwatch.truncated"]


async def test_a_failing_dlq_send_is_logged_and_never_raised() -> None:
    """Even when the DLQ cannot be written, nothing leaves the guard."""
    guard = RecordGuard(NAMES, Sink(fail=True), Metrics(policy_with()))

    async def handle(record: Record) -> None:
        raise ValueError("boom")

    assert False is await guard.run(_record(0), handle)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("bad"), "internal_error: ValueError: bad"),
        (KeyError("k"), "internal_error: KeyError: 'k'"),
        (RecursionError(), "internal_error: RecursionError: "),
    ],
)
def test_internal_error_reason_names_type_and_message(exc: Exception, expected: str) -> None:
    """The reason is `internal_error: <type>: <message>`."""
    assert expected == internal_error_reason(exc)


async def test_work_at_the_end_of_a_batch_that_raises_is_counted_not_raised() -> None:
    """The end-of-batch work (the detectors' entries) raising costs a count, not the agent."""
    sink, metrics = Sink(), Metrics(policy_with())
    guard = RecordGuard(NAMES, sink, metrics)

    async def work() -> None:
        raise RuntimeError("encoder broke")

    await guard.settle("g.claims", work)
    await guard.settle("g.claims", work)

    assert 2.0 == _counter(metrics, "claimwatch_internal_errors_total", topic="g.claims")
    assert [] == sink.sent
