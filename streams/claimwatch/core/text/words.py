"""Per-word reduction for the comparator: stems, lemma candidates, what one word contributes."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Final

from claimwatch.core.text import tables as t
from claimwatch.core.text.script import script_of
from claimwatch.core.text.tables import Lexicon, Stemmer

PLAIN_STEMMER: Final = Stemmer()
#: The kind `classify` gives an ordinary content word (its value is the word's key).
CONTENT: Final = "content"


def stem(word: str, stemmer: Stemmer) -> str:
    """The comparison form of a word: plural -s, or one clitic prefix and one suffix removed."""
    if stemmer.plural_s:
        if word.endswith("'s"):
            word = word[:-2]
        if len(word) > 3 and word[-1] == "s" and word[-2] not in "su'" and not word.endswith("is"):
            if word.endswith("ies") and len(word) > 4:
                return word[:-3] + "y"
            if word.endswith(("sses", "shes", "ches", "xes")):
                return word[:-2]
            return word[:-1]
        return word
    for prefix in stemmer.prefixes:
        if word.startswith(prefix) and len(word) - len(prefix) >= stemmer.min_stem:
            word = word[len(prefix) :]
            break
    for suffix in stemmer.suffixes:
        if word.endswith(suffix) and len(word) - len(suffix) >= stemmer.min_stem:
            return word[: -len(suffix)]
    return word


def lemma_candidates(word: str, stemmer: Stemmer) -> Iterator[str]:
    """Base forms a polar word may have: approved -> approve, repelled -> repel."""
    yield word
    for suffix, replacement in stemmer.lemma_suffixes:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            base = word[: -len(suffix)] + replacement
            yield base
            if stemmer.double_consonant and not replacement and base[-1] == base[-2] != "s":
                yield base[:-1]


def _prefixed(lex: Lexicon, word: str) -> tuple[str, str] | None:
    """The longest polar stem a word starts with (scripts that inflect by suffix)."""
    for size in range(min(len(word), lex.prefix_max), 1, -1):
        found = lex.prefixes.get(word[:size])
        if found is not None:
            return found
    return None


def classify(lex: Lexicon, token: str) -> tuple[int, str, str]:
    """What one word contributes, by itself: (negations, kind, value); kind `content` adds value.

    A pure function of the word and the tables, so the reader memoizes it per word.
    """
    entry = lex.words.get(token)
    if entry is not None:
        return (0, *entry)
    stemmer = lex.stemmers.get(script_of(token), PLAIN_STEMMER)
    word, negations = token, 0
    for suffix in stemmer.negative_suffixes:
        if word.endswith(suffix) and len(word) - len(suffix) >= stemmer.min_stem:
            word, negations = word[: -len(suffix)], 1
            break
    if stemmer.prefix_match:
        found = _prefixed(lex, word) or _prefixed(lex, stem(word, stemmer))
        if found is not None:
            return (negations, *found)
    key = stem(word, stemmer)
    for candidate in lemma_candidates(key, stemmer) if stemmer.lemma_suffixes else (key,):
        entry = lex.words.get(candidate)
        if entry is not None and (candidate == key or entry[0] in (t.POLAR, t.LEXNEG)):
            return (negations, *entry)
    return (negations, CONTENT, key)


#: Most digits a number token of a passage may have to be read as a number. Longer digit
#: runs (a pasted table, a hash, a 9 KB "1,1,1,...") are compared as plain words: no
#: quantity in prose has more, and `int()` refuses more than 4,300 digits outright.
MAX_NUMBER_DIGITS: Final = 40
#: Longest number token looked at at all (digits and separators together).
_MAX_NUMBER_TEXT: Final = 2 * MAX_NUMBER_DIGITS


def parse_number(text: str) -> Fraction | None:
    """1,000.5 -> 1000.5; a lone comma not followed by three digits is a decimal comma.

    None for a token of more than MAX_NUMBER_DIGITS digits: it is not read as a number.
    """
    if len(text) > _MAX_NUMBER_TEXT or sum(ch.isdigit() for ch in text) > MAX_NUMBER_DIGITS:
        return None
    if "," in text:
        groups = text.split(",")
        if all(len(g.split(".")[0]) == 3 for g in groups[1:]):
            text = "".join(groups)
        else:
            text = text.replace(",", ".", 1).replace(",", "")
    head, _, tail = text.partition(".")
    return Fraction(int(head + tail.replace(".", "")), 10 ** len(tail.replace(".", "")))
