"""Faust's stream-check paragraphs become one line per kind and window, with a count."""

from __future__ import annotations

import logging

import pytest
from claimwatch.worker.quiet_logs import FAUST_CONSUMER_LOGGER, RepeatsInOneLine, quiet_faust_checks
from faust.transport.drivers import aiokafka as faust_driver


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stream_idle() -> str:
    """Faust's own "Stream has not started processing" message, as its consumer thread logs it."""
    thread = faust_driver.AIOKafkaConsumerThread
    text = thread._make_slow_processing_error(
        None,  # type: ignore[arg-type]
        faust_driver.SLOW_PROCESSING_STREAM_IDLE_SINCE_START,
        [faust_driver.SLOW_PROCESSING_CAUSE_STREAM, faust_driver.SLOW_PROCESSING_CAUSE_AGENT],
        "stream_processing_timeout",
        300.0,
    )
    return f"[^--AIOKafkaConsumerThread]: {text}"


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(FAUST_CONSUMER_LOGGER, logging.ERROR, "x", 1, msg, args, None)


def _shown(quiet: RepeatsInOneLine, records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if quiet.filter(r)]


def test_a_rebalance_of_many_partitions_logs_one_line_per_minute_with_a_count() -> None:
    """100 paragraphs over 4 partitions in a minute: one line; the next minute says 99 more."""
    clock = Clock()
    quiet = RepeatsInOneLine(window_s=60.0, clock=clock)
    message = _stream_idle()
    assert 10 < message.count("\n")  # what Faust logs: a paragraph each
    first = _shown(quiet, [_record(message, f"TP(t, {n % 4})", "a minute ago") for n in range(100)])
    clock.now = 61.0
    later = _shown(quiet, [_record(message, "TP(t, 0)", "2 minutes ago")])
    head = "[^--AIOKafkaConsumerThread]: Stream has not started processing 'TP(t, 0)'"
    assert [f"{head} (started a minute ago)."] == first
    assert [
        f"{head} (started 2 minutes ago). [99 more like it in the last 61 s not shown]"
    ] == later


@pytest.mark.parametrize(
    "message",
    ["Worker ready", "Agent crashed: %r", "[^--Consumer]: Timed out waiting for commit"],
)
def test_other_messages_pass_unchanged_every_time(message: str) -> None:
    quiet = RepeatsInOneLine(clock=Clock())
    records = [_record(message, "x") if "%r" in message else _record(message) for _ in range(3)]
    assert 3 == len(_shown(quiet, records))
    assert message == records[0].msg


def test_active_partition_lines_of_every_partition_are_one_kind() -> None:
    """Faust's "No active partitions for <tp>" embeds the partition: grouped all the same."""
    quiet = RepeatsInOneLine(clock=Clock())
    shown = _shown(quiet, [_record(f"No active partitions for TP(t, {n})") for n in range(8)])
    assert ["No active partitions for TP(t, 0)"] == shown


def test_the_worker_installs_the_filter_once_on_fausts_consumer_logger() -> None:
    """Installed where Faust's consumer thread logs; a second call adds nothing."""
    logger = logging.getLogger(FAUST_CONSUMER_LOGGER)
    before = list(logger.filters)
    try:
        first = quiet_faust_checks()
        again = quiet_faust_checks()
        assert first is again
        assert 1 == sum(isinstance(f, RepeatsInOneLine) for f in logger.filters)
    finally:
        logger.filters[:] = before
