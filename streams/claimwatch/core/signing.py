"""Signed claims: canonical bytes of a claim, HMAC-SHA256 signatures, key ids and their check.

The canonical claim is the claim's JSON object without its `signature` key, keys sorted at
every level, compact separators (`,` and `:`), non-ASCII characters as UTF-8 (not escaped),
NaN and infinities refused. The signature is the lowercase hex HMAC-SHA256 of those bytes
under the source's key and travels in the envelope as `signature`. A claim signed with a
named key carries the key's id as `kid`; `kid` is part of the canonical bytes, so it cannot
be swapped for another without breaking the signature.

Which sources must sign (the policy's `signing` section):
- a bare name (`billing-api`) covers the source and every `@region` of it;
- an exact id (`billing-api@eu`) covers that id, and its keys take precedence over the bare
  name's for it (they are not merged);
- an exact id whose regions share the bare registry entry (`sources: billing-api`, no
  `sources: billing-api@eu`) makes every region of the service sign: they are one source
  to the policy. A region without a key of its own or of the bare name is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final

from claimwatch.core.limits import clip
from claimwatch.core.policy import CompiledPolicy, KeyRing, base_source

#: Envelope key of the signature.
SIGNATURE_KEY: Final = "signature"
#: Envelope key of the id of the key a claim is signed with.
KID_KEY: Final = "kid"
#: Prefix of every rejection reason (the DLQ reason and the metrics label).
BAD_SIGNATURE: Final = "bad_signature"
_HEX_LENGTH: Final = 64
#: Key ids listed in a reason at most.
_KIDS_SHOWN: Final = 5


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


def signed(envelope: Mapping[str, Any], key: bytes, kid: str | None = None) -> dict[str, Any]:
    """A copy of the claim carrying its signature (an existing one is replaced).

    With `kid` the copy names the key (`kid`) and the signature covers that name.
    """
    body = {k: v for k, v in envelope.items() if k != SIGNATURE_KEY}
    if kid is not None:
        body[KID_KEY] = kid
    return {**body, SIGNATURE_KEY: sign(body, key)}


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


def verify_with(envelope: Mapping[str, Any], keys: KeyRing) -> str | None:
    """None when the claim's signature is valid under the key its `kid` names, else why not."""
    kid = envelope.get(KID_KEY)
    if kid is not None and not isinstance(kid, str):
        return "`kid` must be a string (the id of the key the claim is signed with)"
    key = keys.get(kid)
    if key is not None:
        return verify(envelope, key)
    known = sorted(k for k in keys if k is not None)
    listed = ", ".join(repr(k) for k in known[:_KIDS_SHOWN]) + (
        ", …" if len(known) > _KIDS_SHOWN else ""
    )
    if kid is None:
        return f"no `kid`: the source signs with named keys only ({listed})"
    accepted = f"known: {listed}" if known else "the source's key has no kid: send none"
    return f"unknown kid {clip(kid)!r} ({accepted})"


def signing_entry(policy: CompiledPolicy, source: str) -> str | None:
    """The `signing` entry whose keys check `source`: its exact id, else its bare name."""
    signing = policy.policy.signing
    if source in signing:
        return source
    base = base_source(source)
    return base if base in signing else None


def must_sign(policy: CompiledPolicy, source: str) -> bool:
    """Whether the policy requires `source` to sign (see the module's rules)."""
    if signing_entry(policy, source) is not None:
        return True
    own_entry = "@" in source and source in policy.policy.sources
    return not own_entry and base_source(source) in policy.shared_signing


def signature_problem(policy: CompiledPolicy, envelope: Mapping[str, Any]) -> str | None:
    """None when the claim may be decided, else the `bad_signature: ...` rejection reason."""
    if not policy.policy.signing:
        return None
    source = envelope.get("source")
    if not isinstance(source, str) or not must_sign(policy, source):
        return None
    name = signing_entry(policy, source)
    if name is None:
        base = base_source(source)
        return (
            f"{BAD_SIGNATURE}: no key covers source {clip(source)!r}: it shares the registry "
            f"entry {base!r} with a signing region of it; sign {base!r} (every region) or "
            f"{clip(source)!r} in the policy's `signing`"
        )
    keys = policy.signing_keys.get(name)
    if not keys:
        return f"{BAD_SIGNATURE}: no key is loaded for signing source {name!r}"
    problem = verify_with(envelope, keys)
    return None if problem is None else f"{BAD_SIGNATURE}: {problem} (source {clip(source)!r})"
