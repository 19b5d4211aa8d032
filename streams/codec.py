"""The one place that turns bytes into claims and records into bytes (orjson)."""

from __future__ import annotations

from typing import Any

import orjson

from streams.core.claim import Claim, EnvelopeError, claim_from_envelope

#: Largest claim message accepted (bytes); larger ones go to the dead-letter topic.
MAX_CLAIM_BYTES = 64 * 1024


class DecodeError(ValueError):
    """Bytes that are not a claim; the message is the reason."""


def decode_claim(raw: bytes | str) -> Claim:
    """Parse one claim message; raise DecodeError with a reason a human can act on."""
    if len(raw) > MAX_CLAIM_BYTES:
        raise DecodeError(f"message of {len(raw)} bytes exceeds the {MAX_CLAIM_BYTES}-byte limit")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {exc}") from None
    try:
        return claim_from_envelope(data)
    except EnvelopeError as exc:
        raise DecodeError(str(exc)) from None


def dumps(record: Any) -> bytes:
    """Serialize a record compactly; output is deterministic for the same record."""
    return orjson.dumps(record)


def dumps_line(record: Any) -> bytes:
    """Serialize a record as one JSON line."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


def loads(raw: bytes | str) -> Any:
    """Parse JSON bytes."""
    return orjson.loads(raw)
