"""Dung argumentation: frameworks, grounded/complete/preferred/stable extensions, verdicts."""

from streams.core.argue.decide import AttackRule, Verdict, VerdictArgument, decide
from streams.core.argue.framework import Framework, FrameworkError, name_key
from streams.core.argue.grounded import grounded_extension, grounded_labels
from streams.core.argue.semantics import (
    Acceptance,
    Semantics,
    acceptance,
    extensions,
    named_extensions,
)

__all__ = [
    "Acceptance",
    "AttackRule",
    "Framework",
    "FrameworkError",
    "Semantics",
    "Verdict",
    "VerdictArgument",
    "acceptance",
    "decide",
    "extensions",
    "grounded_extension",
    "grounded_labels",
    "name_key",
    "named_extensions",
]
