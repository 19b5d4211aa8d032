"""Small exact statistics for the detectors: the Poisson upper tail and a median, stdlib only."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Terms smaller than this fraction of the running sum end the tail series.
_EPSILON = 1e-17


def poisson_sf(count: int, expected: float) -> float:
    """P(X >= count) for X ~ Poisson(expected), computed in pure Python (no scipy)."""
    if count <= 0:
        return 1.0
    if expected <= 0.0:
        return 0.0
    if count > expected:
        # Sum the upper tail from `count` up: the terms fall off geometrically past the mean.
        term = math.exp(count * math.log(expected) - expected - math.lgamma(count + 1))
        total, i = 0.0, count
        while term > 0.0:
            total += term
            i += 1
            term *= expected / i
            if term < total * _EPSILON:
                break
        return min(1.0, total)
    # Below the mean the tail is large: 1 - P(X <= count - 1), summed downward.
    term = math.exp((count - 1) * math.log(expected) - expected - math.lgamma(count))
    lower, i = 0.0, count - 1
    while term > 0.0:
        lower += term
        if i == 0:
            break
        term *= i / expected
        i -= 1
        if term < lower * _EPSILON:
            break
    return max(0.0, 1.0 - lower)


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence (mean of the middle two for an even length)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2.0
