"""Offline resolution speed: claimwatch's path vs a plain baseline (stdlib json, no caching).

Run one side per process so that each peak-memory figure is its own:
`python -m bench.resolve_bench fast|baseline FILE` prints one JSON line of figures.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from bench.workload import NOW, POLICY
from streams.audit.resolve_file import read_claims, resolve_batch
from streams.core import normalize, units
from streams.core.policy import CompiledPolicy, FieldRule, SourceView
from streams.core.timeutil import parse_rfc3339
from streams.policy.loading import load_policy


class UncachedPolicy(CompiledPolicy):
    """The same rules with nothing compiled or memoized: every lookup is redone per claim."""

    def rule(self, field: str) -> FieldRule:
        return self._compile(field)

    def source_view(self, field: str, source: str) -> SourceView:
        return self._view(field, source)


def _uncached_normalizers() -> None:
    """Build a fresh normalizer per call; pint and babel consulted on every value."""
    normalize.normalizer_for = lambda spec: normalize._BY_TYPE[spec.type](spec)  # type: ignore[assignment]
    normalize.converter = lambda src, dst: (  # type: ignore[assignment]
        lambda value: units.convert_uncached(value, src, dst)
    )
    normalize._currency_precision = normalize._currency_precision.__wrapped__  # type: ignore[attr-defined]
    import streams.core.policy as policy_module

    policy_module.normalizer_for = normalize.normalizer_for  # type: ignore[attr-defined]


def run(mode: str, path: Path) -> dict[str, Any]:
    """Resolve the file; return claims, facts, seconds and peak RSS."""
    now = parse_rfc3339(NOW)
    started = time.perf_counter()
    if mode == "fast":
        policy = load_policy(POLICY)
        with path.open("rb") as handle:
            batch = read_claims(handle, str(path))
        with open("/dev/null", "wb") as sink:
            from streams.wire.codec import dumps_line

            for record in resolve_batch(batch, policy, now):
                sink.write(dumps_line(record))
    else:
        _uncached_normalizers()
        policy = UncachedPolicy(load_policy(POLICY).policy)
        import streams.audit.resolve_file as offline

        offline.decode_claim = _stdlib_decode  # type: ignore[assignment]
        with path.open("rb") as handle:
            batch = read_claims(handle, str(path))
        with open("/dev/null", "w") as sink:
            for record in resolve_batch(batch, policy, now):
                sink.write(json.dumps(record) + "\n")
    elapsed = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "mode": mode,
        "claims": batch.claims,
        "facts": len(batch.facts),
        "seconds": round(elapsed, 3),
        "claims_per_s": round(batch.claims / elapsed),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def _stdlib_decode(raw: bytes | str) -> Any:
    from streams.core.claim import EnvelopeError, claim_from_envelope
    from streams.wire.codec import DecodeError

    try:
        return claim_from_envelope(json.loads(raw))
    except (ValueError, EnvelopeError) as exc:
        raise DecodeError(str(exc)) from None


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], Path(sys.argv[2]))))
