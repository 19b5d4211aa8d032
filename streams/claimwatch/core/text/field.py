"""The `text` field type in resolution: passages agree unless the comparator finds a conflict."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations
from typing import Final

from claimwatch.core.text.compare import Comparison, compare_passages
from claimwatch.core.text.tokenize import Passage, analyze
from claimwatch.core.values.strings import _StringNormalizer
from claimwatch.models.policy import FieldPolicy


class TextNormalizer(_StringNormalizer):
    """text: canonical like a string (NFKC, whitespace, case); agreement is "no conflict".

    Two passages agree unless the comparator finds a conflict between them, so a set of
    passages agrees when no pair conflicts: passages that do not conflict are complementary.
    """

    groups_duplicates = True
    #: Bound on the analyzed passages kept per field, in number and in characters of text
    #: (a cache: results never depend on it; a passage's analysis is a few times its size).
    _MAX_PASSAGES: Final = 4096
    _MAX_CACHED_CHARS: Final = 4_000_000

    def __init__(self, field: FieldPolicy) -> None:
        super().__init__(field)
        self._passages: dict[str, Passage] = {}
        self._cached_chars = 0

    def passage(self, text: str) -> Passage:
        """The analysis of a canonical passage, computed once."""
        found = self._passages.get(text)
        if found is None:
            found = analyze(text)
            full = self._cached_chars + len(text) > self._MAX_CACHED_CHARS
            if full or len(self._passages) >= self._MAX_PASSAGES:
                self._passages.clear()
                self._cached_chars = 0
            self._passages[text] = found
            self._cached_chars += len(text)
        return found

    def verdict(self, a: str, b: str) -> Comparison:
        """The comparator's verdict on two canonical passages."""
        return compare_passages(self.passage(a), self.passage(b))

    def agree(self, a: Hashable, b: Hashable) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            return a == b or not self.verdict(a, b).conflict
        return super().agree(a, b)

    def all_agree(self, values: Sequence[Hashable]) -> bool:
        texts = sorted({v for v in values if isinstance(v, str)})
        others = [v for v in values if not isinstance(v, str)]
        if texts and others:
            return False  # a passage against not_found (or null) is never agreement
        if others:
            return super().all_agree(others)
        return not any(self.verdict(a, b).conflict for a, b in combinations(texts, 2))

    def duplicate(self, a: Hashable, b: Hashable) -> bool:
        """Whether two canonical passages are near-duplicates (one lineage, not corroboration)."""
        if not isinstance(a, str) or not isinstance(b, str):
            return False
        return a == b or self.verdict(a, b).duplicate
