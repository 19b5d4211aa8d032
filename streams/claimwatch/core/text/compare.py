"""The passage comparator: (left, right) -> conflict, rule, detail, duplicate.

The rules: docs/conflict-kinds.md#text-passages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from claimwatch.core.text.tables import lexicon
from claimwatch.core.text.tokenize import Passage, Quantity, analyze
from claimwatch.core.text.words import classify

# Every threshold of the comparator, in one place. None is a caller parameter: a labelled
# test pair cannot pin a value the caller may change.

#: Content words allowed to differ once the signal (antonym pair, negation, numbers) is set
#: aside. Every extra word admitted turns scope words (adults/children, q1/q2, staging/
#: production) into false conflicts; 0 would miss conflicts phrased with one word of slack.
MAX_RESIDUAL: Final = 1
#: Share of the subject words (content minus the signal) two passages must have in common to
#: be about the same thing. Higher misses short restatements; lower lets a shared word or two
#: ("policy", "cluster") make unrelated passages comparable.
SUBJECT_OVERLAP: Final = 0.60
#: Total content divergence, signal included, past which a pair is simply unrelated. Higher
#: lets long unrelated passages through to the rules; lower misses two-pair antonym swaps.
MAX_SYMDIFF: Final = 3
#: Content words each passage needs before it is comparable at all. Lower lets fragments
#: ("recall issued in 2022" / "in 2024": two recalls or one?) conflict on thin evidence;
#: higher drops short but complete statements.
MIN_CONTENT: Final = 3
#: The one exception to MIN_CONTENT: a polarity flip over an otherwise identical statement
#: (residual 0) is comparable with two content words, because a terse sentence such as
#: Telugu "arbitration needed" / "arbitration needed not" carries a whole proposition in two
#: words. Numbers get no such exception: with two words there is too little to say whose
#: number it is. Lowering it to 1 would let single-word labels conflict.
MIN_CONTENT_EXACT_FLIP: Final = 2
#: Jaccard similarity (content words and measured values) at which two passages of the same
#: polarity are surface clones and count as one lineage. Lower collapses paraphrases that
#: may be independent (independence is provenance, not text); higher lets trivial edits
#: count as corroboration.
DUPLICATE_JACCARD: Final = 0.80

ANTONYM: Final = "antonym"
NEGATION: Final = "negation"
VALUE: Final = "value"


@dataclass(frozen=True, slots=True)
class Comparison:
    """The comparator's answer for one pair of passages."""

    conflict: bool
    rule: str | None = None
    detail: str | None = None
    duplicate: bool = False

    def as_json(self) -> dict[str, bool | str | None]:
        return {
            "conflict": self.conflict,
            "rule": self.rule,
            "detail": self.detail,
            "duplicate": self.duplicate,
        }


def compare(left: str, right: str) -> Comparison:
    """Compare two passages; symmetric (swapping them mirrors only the detail)."""
    return compare_passages(analyze(left), analyze(right))


def compare_passages(a: Passage, b: Passage) -> Comparison:
    """Compare two analyzed passages: antonym, negation, value, then near-duplicate."""
    only_a, only_b = a.content - b.content, b.content - a.content
    total = len(only_a) + len(only_b)
    shared = len(a.content) - len(only_a)
    smaller = min(len(a.content), len(b.content))
    pairs = _antonym_pairs(only_a, only_b)
    negated = (a.negations - b.negations) % 2 == 1
    flipped = (len(pairs) + negated) % 2 == 1
    if flipped:
        residual = total - 2 * len(pairs)
        if _same_subject(shared, residual, total, smaller, exact=residual == 0):
            if negated:
                detail = f"{_polarity(a)} vs {_polarity(b)}"
                return Comparison(True, NEGATION, detail)
            left, right = pairs[0]
            return Comparison(True, ANTONYM, f"{a.surface[left]} vs {b.surface[right]}")
    elif not negated and not pairs:
        values = _diverging_values(a, b)
        if values is not None and _same_subject(shared, total, total, smaller, exact=False):
            return Comparison(True, VALUE, values)
    quoted = (a.quoted_negations - b.quoted_negations) % 2 == 1
    duplicate = not flipped and not quoted and _similarity(a, b) >= DUPLICATE_JACCARD
    return Comparison(False, duplicate=duplicate)


def _same_subject(shared: int, residual: int, total: int, smaller: int, *, exact: bool) -> bool:
    """The guards: about the same subject, little beyond the signal, enough words each."""
    if residual > MAX_RESIDUAL or total > MAX_SYMDIFF or shared == 0:
        return False
    if shared / (shared + residual) < SUBJECT_OVERLAP:
        return False
    return smaller >= MIN_CONTENT or (exact and smaller >= MIN_CONTENT_EXACT_FLIP)


def _antonym_pairs(only_a: frozenset[str], only_b: frozenset[str]) -> list[tuple[str, str]]:
    """Disjoint antonym pairs (a word of a, a word of b), picked in an order both sides share."""
    lex = lexicon()
    edges: set[tuple[str, str]] = set()
    for word in only_a:
        edges.update((word, other) for other in lex.antonyms.get(word, ()) if other in only_b)
    for side, other_side, flip in ((only_a, only_b, False), (only_b, only_a, True)):
        for word in side:
            for prefix, suffixes in lex.negative_prefixes.items():
                base = word[len(prefix) :]
                if not word.startswith(prefix) or len(base) < 4:
                    continue
                if suffixes and not base.endswith(suffixes):
                    continue
                key = base if base in other_side else classify(lex, base)[2]  # unencrypted
                if key in other_side:
                    edges.add((key, word) if flip else (word, key))
    pairs: list[tuple[str, str]] = []
    used: set[str] = set()
    for left, right in sorted(edges, key=lambda e: (min(e), max(e))):
        if left not in used and right not in used:
            pairs.append((left, right))
            used.update((left, right))
    return pairs


def _polarity(passage: Passage) -> str:
    return "negated" if passage.negations % 2 else "affirmed"


def _diverging_values(a: Passage, b: Passage) -> str | None:
    """`30 vs 60` when the units match and neither value set contains the other."""
    if not a.values or a.dimensions != b.dimensions:
        return None
    if a.values <= b.values or b.values <= a.values:
        return None
    left = [q for q in a.quantities if (q.dimension, q.value) not in b.values]
    right = [q for q in b.quantities if (q.dimension, q.value) not in a.values]
    with_units = len({q.unit for q in left + right}) > 1
    return f"{_render(left, with_units)} vs {_render(right, with_units)}"


def _render(quantities: list[Quantity], with_units: bool) -> str:
    shown: list[str] = []
    for q in quantities:
        text = f"{q.number} {q.unit}" if with_units and q.unit else q.number
        if text not in shown:
            shown.append(text)
    return ", ".join(shown)


def _similarity(a: Passage, b: Passage) -> float:
    """Jaccard similarity of content words and measured values (texts alike when both empty)."""
    keys_a, keys_b = a.duplicate_keys, b.duplicate_keys
    if not keys_a and not keys_b:
        return 1.0 if a.folded == b.folded else 0.0
    return len(keys_a & keys_b) / len(keys_a | keys_b)
