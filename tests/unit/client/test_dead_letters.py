"""A dead-letter record read back: origin and reason from its headers, or saying they lack."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord
from claimwatch.client.dead_letters import DeadLetter

VALUE = b'{"claim_id":"c1","subject":"s","field":"f"}'
WORKER_HEADERS = [
    ("claimwatch.reason", b"nested deeper than 64 levels"),
    ("claimwatch.topic", b"p.claims"),
    ("claimwatch.partition", b"2"),
    ("claimwatch.offset", b"41"),
]


def record(headers: list[tuple[str, bytes]], value: bytes = VALUE) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(
        "p.claims.dlq", 2, 7, 1_700_000_000_000, 0, b"s|f", value, None, len(value), 3, headers
    )


@pytest.mark.parametrize(
    ("headers", "line"),
    [
        (
            WORKER_HEADERS,
            f"p.claims[2]@41\ts|f\tnested deeper than 64 levels\t{VALUE.decode()}",
        ),
        (
            [],
            "(origin unknown)\ts|f\t(no claimwatch.reason header: not written by a claimwatch"
            f" worker)\t{VALUE.decode()}",
        ),
        (
            [("claimwatch.reason", b"r"), ("claimwatch.partition", b"x")],
            f"(origin unknown)\ts|f\tr\t{VALUE.decode()}",
        ),
    ],
)
def test_a_record_reads_with_or_without_the_workers_headers(
    headers: list[tuple[str, bytes]], line: str
) -> None:
    assert line == DeadLetter.of(record(headers)).line()


def test_the_summary_names_origin_reason_and_claim() -> None:
    letter = DeadLetter.of(record(WORKER_HEADERS))
    summary = letter.summary()
    assert ("c1", "p.claims", 2, 41, "nested deeper than 64 levels", 7) == (
        letter.claim_id(),
        summary["topic"],
        summary["partition"],
        summary["offset"],
        summary["reason"],
        summary["dlq_offset"],
    )


@pytest.mark.parametrize("value", [b"", b"not json", b"[1]", b'{"claim_id": 3}'])
def test_a_value_without_a_claim_id_has_none(value: bytes) -> None:
    assert None is DeadLetter.of(record(WORKER_HEADERS, value)).claim_id()


def test_a_long_value_is_cut_short() -> None:
    letter = DeadLetter.of(record(WORKER_HEADERS, b"x" * 500))
    assert letter.line().endswith("\t" + "x" * 120 + "...")
