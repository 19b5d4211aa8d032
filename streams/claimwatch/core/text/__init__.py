"""Contradiction detection between text passages: pure, table-driven.

The rules: docs/conflict-kinds.md#text-passages.
"""

from claimwatch.core.text.compare import Comparison, compare, compare_passages
from claimwatch.core.text.tokenize import Passage, analyze

__all__ = ["Comparison", "Passage", "analyze", "compare", "compare_passages"]
