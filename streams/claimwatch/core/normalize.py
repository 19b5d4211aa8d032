"""Normalization of claim values per field type (docs/reference/policy.md); pure and deterministic.

Every claim value is turned into a *canonical* value: hashable, comparable, and the same
for two values that mean the same thing under the field's policy (money in integer minor
units of an explicit currency, quantities in the field's unit, timestamps in UTC
microseconds, strings after NFKC and the field's whitespace and case rules, numbers as
floats compared with the field's tolerance). A value that breaks the field's contract
raises NormalizationError whose message says what was expected and what was received.

One normalizer is built per field policy (cached) and holds the precomputed per-field
state, so the per-claim path does no pint, babel or regex compilation work.
"""

from __future__ import annotations

from claimwatch.core.values.base import ABSENT, NormalizationError, Normalizer
from claimwatch.core.values.numbers import DEFAULT_REL_TOLERANCE
from claimwatch.core.values.registry import canonical, normalizer_for

__all__ = [
    "ABSENT",
    "DEFAULT_REL_TOLERANCE",
    "NormalizationError",
    "Normalizer",
    "canonical",
    "normalizer_for",
]
