"""How many bytes a claim takes once encoded, and the byte budget of one fact's live claims.

A fact's stored state and its decision record carry every live claim of the fact; both
must stay below the producer's request limit (1,000,000 bytes) whatever the claims. A
message may be 64 KiB, and a fact keeps up to 64 claims: sizes alone, not counts, bound
them. A decision record shows each claim's envelope once, and the values of the winner
and of the competing claims once more (with their canonical forms), so it takes at most
about three times the claims' bytes; the stored state about once.

So a fact's live claims may take at most MAX_FACT_CLAIM_BYTES together, and one claim at
most MAX_CLAIM_ENCODED_BYTES. A claim that would pass either is refused at arrival (dead-
lettered with the reason, its id not marked seen): the sender gets an answer at once, and
the claims already decided stay as they were. The sizes are measured as JSON text,
compact and UTF-8, the way the records are written; a text value counts its canonical
form too (NFKC and case folding can make a passage many times longer: U+FDFA is 18
characters), which a record shows beside the value.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Final

from claimwatch.core.claim import Claim
from claimwatch.core.limits import fit_for_json

#: Most bytes the live claims of one fact take together (their envelopes as JSON).
MAX_FACT_CLAIM_BYTES: Final = 256 * 1024
#: Most bytes one claim's envelope takes as JSON (twice a message's size limit: a number
#: written `1e5` is written back as `100000.0`).
MAX_CLAIM_ENCODED_BYTES: Final = 128 * 1024


#: How a caller measures a claim's envelope as JSON bytes (the worker uses its own encoder).
SizeOf = Callable[[Claim], int]


def claim_size(claim: Claim) -> int:
    """The bytes a claim brings to its fact's records.

    Its envelope as compact UTF-8 JSON (numbers no encoder takes, as text), plus, for a
    string value, the bytes of its canonical form (see `canonical_bytes`).
    """
    try:
        text = json.dumps(claim.envelope, ensure_ascii=False, separators=(",", ":"))
    except ValueError:  # an integer of thousands of digits: measured as its text
        text = json.dumps(fit_for_json(claim.envelope), ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass")) + canonical_bytes(claim)


def canonical_bytes(claim: Claim) -> int:
    """The bytes of a string value's canonical form (an upper bound: NFKC, case folding).

    An ASCII value folds to as many bytes as it has; others are normalized to be measured.
    """
    value = claim.envelope.get("value")
    if type(value) is not str:
        return 0
    if value.isascii():
        return len(value) + 2
    canonical = unicodedata.normalize("NFKC", value).casefold()
    return len(canonical.encode("utf-8", "surrogatepass")) + 2


def over_budget(size: int, held: int) -> str | None:
    """Why a claim of `size` bytes cannot join live claims of `held` bytes (None: it can)."""
    if size > MAX_CLAIM_ENCODED_BYTES:
        return (
            f"claim of {size} bytes once encoded (with its canonical form) exceeds the "
            f"{MAX_CLAIM_ENCODED_BYTES}-byte limit of one claim"
        )
    if held + size > MAX_FACT_CLAIM_BYTES:
        return (
            f"claim of {size} bytes exceeds its fact's budget: the fact's live claims hold "
            f"{held} bytes of at most {MAX_FACT_CLAIM_BYTES}; resend it once older claims "
            "have gone stale, or send a smaller value"
        )
    return None
