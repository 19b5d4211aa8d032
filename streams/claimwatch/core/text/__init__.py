"""Contradiction detection between text passages: pure, table-driven.

The rules: docs/conflict-kinds.md#text-passages.
"""

from claimwatch.core.text.compare import Verdict, compare, compare_passages
from claimwatch.core.text.tokenize import Passage, analyze

__all__ = ["Passage", "Verdict", "analyze", "compare", "compare_passages"]
