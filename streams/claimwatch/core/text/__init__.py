"""Contradiction detection between text passages (SPEC section 8): pure, table-driven."""

from claimwatch.core.text.compare import Comparison, compare, compare_passages
from claimwatch.core.text.tokenize import Passage, analyze

__all__ = ["Comparison", "Passage", "analyze", "compare", "compare_passages"]
