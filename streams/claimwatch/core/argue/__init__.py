"""Dung argumentation: frameworks, grounded/complete/preferred/stable extensions, verdicts."""

from claimwatch.core.argue.decide import AttackRule, VerdictArgument, VerdictOutcome, decide
from claimwatch.core.argue.framework import Framework, FrameworkError, name_key
from claimwatch.core.argue.grounded import grounded_extension, grounded_labels
from claimwatch.core.argue.search import SearchLimit
from claimwatch.core.argue.semantics import (
    Acceptance,
    Bounds,
    Semantics,
    acceptance,
    extensions,
    named_extensions,
)

__all__ = [
    "Acceptance",
    "AttackRule",
    "Bounds",
    "Framework",
    "FrameworkError",
    "SearchLimit",
    "Semantics",
    "VerdictArgument",
    "VerdictOutcome",
    "acceptance",
    "decide",
    "extensions",
    "grounded_extension",
    "grounded_labels",
    "name_key",
    "named_extensions",
]
