"""Contradiction detection between text passages (SPEC section 8): pure, table-driven."""

from streams.core.text.compare import Verdict, compare, compare_passages
from streams.core.text.tokenize import Passage, analyze

__all__ = ["Passage", "Verdict", "analyze", "compare", "compare_passages"]
