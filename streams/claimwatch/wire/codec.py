"""The one place that turns bytes into claims and records into bytes (orjson)."""

from __future__ import annotations

from typing import Any, Final, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from claimwatch.core.claim import Claim, EnvelopeError, claim_from_envelope
from claimwatch.core.limits import MAX_NESTING

#: Largest claim message accepted (bytes); larger ones go to the dead-letter topic.
MAX_CLAIM_BYTES = 64 * 1024


class DecodeError(ValueError):
    """Bytes that are not a claim; the message is the reason."""


#: Bytes mapped for `keeps_limits`: a digit to b"0", an opening bracket to b"{", any other
#: byte to a space (one C pass, then a count and a substring search).
_DIGITS_AND_OPENINGS: Final = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x7B if b in (0x5B, 0x7B) else 0x20 for b in range(256)
)
#: 19 digits in a row: the fewest an integer beyond signed 64-bit is written with.
_LONG_DIGITS: Final = b"0" * 19


def keeps_limits(raw: bytes) -> bool:
    """Whether orjson's reading of `raw` surely keeps the claim limits of claimwatch.core.limits.

    orjson itself refuses invalid UTF-8, lone surrogates and numbers beyond a double, and
    makes only JSON types, so `scan` can find only two things in what it reads: nesting
    deeper than MAX_NESTING, which takes more brackets than that, and an integer from 2**63
    to 2**64 - 1, which takes 19 digits. Bytes with neither are spared the scan; any others
    (digits in a string included) are scanned.
    """
    mapped = raw.translate(_DIGITS_AND_OPENINGS)
    return mapped.count(b"{") <= MAX_NESTING and _LONG_DIGITS not in mapped


def decode_claim(raw: bytes | str | None, share: bool = True) -> Claim:
    """Parse one claim message; raise DecodeError with a reason a human can act on.

    A tombstone (a null value) is `tombstone: ...`; an empty value, bytes that are not JSON,
    a JSON value that is not an object and an envelope that names no fact are refused too.
    `share` interns the claim's repeated strings (see `claim_from_envelope`).
    """
    if type(raw) is not bytes or not 0 < len(raw) <= MAX_CLAIM_BYTES:  # bytes as read skip it
        raw = _claim_text(raw)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if raw.isspace():
            raise DecodeError(_EMPTY) from None
        raise DecodeError(f"not JSON: {exc}") from None
    return claim_of(data, share, isinstance(raw, bytes) and keeps_limits(raw))


_EMPTY: Final = "empty value: a claim is a JSON object"


def _claim_text(raw: object) -> bytes | str:
    """A value that may be a claim's JSON text, as bytes or str; else DecodeError (why not)."""
    if raw is None:
        raise DecodeError("tombstone: a null value is not a claim (claims are never deleted)")
    if isinstance(raw, bytearray | memoryview):
        raw = bytes(raw)
    if not isinstance(raw, bytes | str):
        raise DecodeError(f"a claim is JSON text, got a {type(raw).__name__}")
    size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
    if size > MAX_CLAIM_BYTES:
        raise DecodeError(f"message of {size} bytes exceeds the {MAX_CLAIM_BYTES}-byte limit")
    if not raw or raw.isspace():
        raise DecodeError(_EMPTY)
    return raw


def claim_of(data: Any, share: bool = True, within_limits: bool = False) -> Claim:
    """The claim of an already parsed message (`decode_claim` after the JSON step).

    `within_limits`: orjson read `data` from bytes for which `keeps_limits` holds.
    """
    try:
        return claim_from_envelope(data, share, within_limits)
    except EnvelopeError as exc:
        raise DecodeError(str(exc)) from None


M = TypeVar("M", bound=BaseModel)


def decode_model(raw: bytes, model: type[M], what: str, max_bytes: int) -> M:
    """Parse one message as a pydantic model; DecodeError names the size limit or the field."""
    if len(raw) > max_bytes:
        raise DecodeError(f"message of {len(raw)} bytes exceeds the {max_bytes}-byte limit")
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        raise DecodeError(f"not {what}: {where}: {error['msg']}") from None


def dumps(record: Any) -> bytes:
    """Serialize a record compactly; output is deterministic for the same record."""
    return orjson.dumps(record)


def fragment(record: Any) -> Any:
    """`record` serialized now, to be embedded as is in records serialized later (`dumps`).

    Kept long (a live claim's part of its fact's record): so its bytes are copied to their
    own size: the bytes orjson returns keep the whole 4 KiB buffer it wrote into.
    """
    return orjson.Fragment(bytes(memoryview(orjson.dumps(record))))


def dumps_line(record: Any) -> bytes:
    """Serialize a record as one JSON line."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


def loads(raw: bytes | str) -> Any:
    """Parse JSON bytes."""
    return orjson.loads(raw)
