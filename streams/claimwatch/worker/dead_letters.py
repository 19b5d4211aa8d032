"""Dead letters: the DLQ copy of a record, with its reason and origin in headers."""

from __future__ import annotations

import hashlib
from typing import Final

from claimwatch.wire.topics import TopicNames
from claimwatch.worker.outgoing import Outgoing

#: Largest DLQ copy (key plus value) sent whole: below the producer's request limit
#: (Faust's producer_max_request_size, 1,000,000 bytes) with room for headers and framing.
DLQ_MAX_BYTES: Final = 1_000_000 - 64 * 1024
#: Longest reason header kept (an exception message can quote a whole value).
MAX_REASON_CHARS: Final = 2_000


def dead_letter(
    names: TopicNames,
    origin: tuple[str, int, int],
    key: bytes | None,
    value: bytes,
    reason: str,
) -> Outgoing:
    """A DLQ record: the original bytes, and the reason and origin (topic, partition, offset).

    A copy that the producer would refuse as too large is truncated; its headers then carry
    `claimwatch.truncated`, the original size and the sha256 of the original value.
    """
    topic, partition, offset = origin
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[:MAX_REASON_CHARS] + "..."
    headers = [
        ("claimwatch.reason", reason.encode()),
        ("claimwatch.topic", topic.encode()),
        ("claimwatch.partition", str(partition).encode()),
        ("claimwatch.offset", str(offset).encode()),
    ]
    if len(key or b"") + len(value) > DLQ_MAX_BYTES:
        headers += [
            ("claimwatch.truncated", b"true"),
            ("claimwatch.original_size", str(len(value)).encode()),
            ("claimwatch.original_sha256", hashlib.sha256(value).hexdigest().encode()),
        ]
        if key is not None and len(key) > DLQ_MAX_BYTES // 2:
            headers.append(("claimwatch.original_key_size", str(len(key)).encode()))
            key = key[: DLQ_MAX_BYTES // 2]
        value = value[: DLQ_MAX_BYTES - len(key or b"")]
    return Outgoing(names.dlq, key, value, partition, tuple(headers))


def internal_error_reason(exc: BaseException) -> str:
    """The DLQ reason of a record whose handling raised `exc`."""
    return f"internal_error: {type(exc).__name__}: {exc}"
