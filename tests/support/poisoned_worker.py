"""`claimwatch` with one fault planted in the core: deciding a fact with a POISON claim raises.

Isolation is about faults nobody has found yet; a test plants one to show what any such
fault costs (its fact alone). Run as `python -m tests.support.poisoned_worker worker ...`:
the real command line, with `resolve_entries` raising for a fact with a claim whose value
starts with POISON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from claimwatch.cli.main import main
from claimwatch.core import processor
from claimwatch.core.claim import Claim

POISON = "POISON"
_original = processor.resolve_entries


def _poisoned(claims: Iterable[Claim], *args: Any, **kwargs: Any) -> Any:
    claims = list(claims)
    for claim in claims:
        if isinstance(claim.value, str) and claim.value.startswith(POISON):
            raise RuntimeError(f"planted fault on claim {claim.claim_id}")
    return _original(claims, *args, **kwargs)


processor.resolve_entries = _poisoned  # type: ignore[assignment]

if __name__ == "__main__":
    main()
