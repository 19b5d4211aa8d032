"""Signed claims: canonical bytes of a claim, HMAC-SHA256 signatures and their check.

The canonical claim is the claim's JSON object without its `signature` key, keys sorted at
every level, compact separators (`,` and `:`), non-ASCII characters as UTF-8 (not escaped),
NaN and infinities refused. The signature is the lowercase hex HMAC-SHA256 of those bytes
under the source's key and travels in the envelope as `signature`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final

from streams.core.policy import CompiledPolicy, base_source

#: Envelope key of the signature.
SIGNATURE_KEY: Final = "signature"
#: Prefix of every rejection reason (the DLQ reason and the metrics label).
BAD_SIGNATURE: Final = "bad_signature"
_HEX_LENGTH: Final = 64


def canonical_bytes(envelope: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the claim minus `signature`, keys sorted, compact, UTF-8."""
    body = {k: v for k, v in envelope.items() if k != SIGNATURE_KEY}
    text = json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def sign(envelope: Mapping[str, Any], key: bytes) -> str:
    """The hex HMAC-SHA256 signature of a claim under `key`."""
    return hmac.new(key, canonical_bytes(envelope), hashlib.sha256).hexdigest()


def signed(envelope: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """A copy of the claim carrying its signature (an existing one is replaced)."""
    return {**envelope, SIGNATURE_KEY: sign(envelope, key)}


def verify(envelope: Mapping[str, Any], key: bytes) -> str | None:
    """None when the claim's signature is valid under `key`, else why it is not."""
    given = envelope.get(SIGNATURE_KEY)
    if given is None:
        return "missing `signature`"
    try:
        if not isinstance(given, str) or len(given) != _HEX_LENGTH:
            raise ValueError
        given_digest = bytes.fromhex(given)
    except ValueError:
        return f"`signature` must be {_HEX_LENGTH} hex characters (HMAC-SHA256)"
    try:
        expected = hmac.new(key, canonical_bytes(envelope), hashlib.sha256).digest()
    except (ValueError, RecursionError) as exc:  # NaN, infinity, a lone surrogate, too deep
        return f"no canonical form: {exc}"
    if not hmac.compare_digest(expected, given_digest):
        return "`signature` does not match the claim (wrong key or changed content)"
    return None


def required_key(policy: CompiledPolicy, source: str) -> tuple[str, bytes | None] | None:
    """(policy entry, loaded key) when the policy requires `source` to sign, else None.

    The entry is the exact source id or else its service part (before `@`), as for the
    source registry. The key is None when the policy was compiled without keys.
    """
    signing = policy.policy.signing
    if not signing:
        return None
    name = source if source in signing else base_source(source)
    if name not in signing:
        return None
    return name, policy.signing_keys.get(name)


def signature_problem(policy: CompiledPolicy, envelope: Mapping[str, Any]) -> str | None:
    """None when the claim may be decided, else the `bad_signature: ...` rejection reason."""
    if not policy.policy.signing:
        return None
    source = envelope.get("source")
    required = required_key(policy, source) if isinstance(source, str) else None
    if required is None:
        return None
    name, key = required
    if key is None:
        return f"{BAD_SIGNATURE}: no key is loaded for signing source {name!r}"
    problem = verify(envelope, key)
    return None if problem is None else f"{BAD_SIGNATURE}: {problem} (source {source!r})"
