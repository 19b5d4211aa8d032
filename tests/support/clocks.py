"""Clock values the tests share: a fixed start and microseconds."""

from __future__ import annotations

from claimwatch.core.timeutil import parse_rfc3339

#: the tests' start of time
T0 = parse_rfc3339("2026-09-14T09:00:00Z")
#: one second in microseconds
SECOND = 1_000_000
