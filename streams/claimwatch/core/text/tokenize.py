"""Passage analysis: content words, negations outside reported speech, measured quantities."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from claimwatch.core.text import tables as t
from claimwatch.core.text.script import (
    ARABIC,
    arabic,
    fold,
    is_han,
    is_katakana,
    scanner,
    script_of,
)
from claimwatch.core.text.tables import Lexicon, Phrase, Stemmer, Unit, lexicon
from claimwatch.core.text.words import CONTENT, PLAIN_STEMMER, classify, parse_number, stem

_ONE: Final = Fraction(1)
#: Most number tokens of one passage read as quantities; later ones are compared as words.
#: Prose states a few quantities; a table of thousands made each passage cost seconds.
MAX_QUANTITIES: Final = 256
_ARABIC: Final = re.compile("[\u0600-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")
#: Bound on the per-word memo of `classify` (cleared when full; results never depend on it).
_MEMO_SIZE: Final = 65536


@dataclass(frozen=True, slots=True)
class Quantity:
    """A measured value: dimension, value in the dimension's base unit, and how it was written."""

    dimension: str
    value: Fraction
    number: str
    unit: str


@dataclass(frozen=True, slots=True, eq=False)
class Passage:
    """What the comparator needs of one passage, computed once."""

    text: str
    content: frozenset[str]
    negations: int
    quoted_negations: int
    quantities: tuple[Quantity, ...]
    values: frozenset[tuple[str, Fraction]]
    dimensions: frozenset[str]
    surface: Mapping[str, str]
    duplicate_keys: frozenset[str]
    folded: str


@dataclass(slots=True)
class _Pending:
    """A number waiting for the scale word and unit that may follow it."""

    number: str
    value: Fraction
    scale: Fraction | None = None
    unit: Unit | None = None
    unit_text: str = ""
    prefixed: bool = False


class _Reader:
    """One pass over the scanned tokens of a passage."""

    def __init__(self, lex: Lexicon, tokens: list[tuple[str, str]]) -> None:
        self.lex = lex
        self.tokens = tokens
        self.content: set[str] = set()
        self.surface: dict[str, str] = {}
        self.negations = 0
        #: number tokens met so far (see MAX_QUANTITIES)
        self.numbers = 0
        self.quoted_negations = 0
        self.sentence_negations = 0
        self.reported = False
        self.quantities: list[Quantity] = []
        self.pending: _Pending | None = None
        self.prefix_dimension: str | None = None

    # ------------------------------------------------------------------ events

    def add(self, key: str, surface: str) -> None:
        self.content.add(key)
        self.surface.setdefault(key, surface)

    def negate(self) -> None:
        if self.reported:
            self.quoted_negations += 1  # a third party's negation, not the source's
            return
        self.negations += 1
        self.sentence_negations += 1

    def close_reported(self) -> None:
        """A quotative after the clause (Japanese と主張, Tamil என்று): its negations are quoted."""
        self.negations -= self.sentence_negations
        self.quoted_negations += self.sentence_negations
        self.sentence_negations = 0

    def sentence_end(self) -> None:
        self.flush()
        self.reported = False
        self.sentence_negations = 0

    def apply(self, kind: str, value: str, surface: str) -> None:
        """The effect of a table entry of the given kind."""
        if kind == t.NEG:
            self.negate()
        elif kind == t.BEFORE:
            self.reported = True
        elif kind == t.AFTER:
            self.close_reported()
        elif kind == t.PLAIN:
            self.add(surface, surface)
        elif kind == t.POLAR:
            self.add(value, surface)
        elif kind == t.LEXNEG:
            self.negate()
            self.add(value, surface)
        elif kind == t.NUMBER:
            self.number(surface, Fraction(value))

    # ------------------------------------------------------------------ quantities

    def number(self, text: str, value: Fraction) -> None:
        prefix = self.prefix_dimension
        self.flush()
        pending = _Pending(text, value)
        if prefix is not None:
            pending.unit, pending.unit_text, pending.prefixed = Unit(prefix, _ONE), "", True
        self.pending = pending

    def flush(self) -> None:
        pending, self.pending = self.pending, None
        self.prefix_dimension = None
        if pending is None:
            return
        value = pending.value * (pending.scale or _ONE)
        dimension = ""
        if pending.unit is not None:
            value *= pending.unit.factor
            dimension = pending.unit.dimension
            self.add("#" + dimension, pending.unit_text or dimension)
        self.quantities.append(Quantity(dimension, value, pending.number, pending.unit_text))

    def attach(self, i: int) -> int:
        """Consume a scale word or a unit after a pending number; returns tokens consumed."""
        pending = self.pending
        if pending is None:
            return 0
        kind, word = self.tokens[i]
        scale = self.lex.scales.get(word) if kind == "word" else None
        if (
            scale is not None
            and pending.scale is None
            and (pending.unit is None or pending.prefixed)
        ):
            pending.scale = scale
            self.add(word, word)
            return 1
        if pending.unit is not None:
            return 0
        used, unit = self.unit_at(i)
        if unit is None:
            return 0
        pending.unit = unit
        pending.unit_text = " ".join(w for _, w in self.tokens[i : i + used])
        if i + used + 1 < len(self.tokens) and self.tokens[i + used][1] in self.lex.per:
            more, denominator = self.unit_at(i + used + 1)
            if denominator is not None:
                pending.unit = Unit(
                    f"{unit.dimension}/{denominator.dimension}", unit.factor / denominator.factor
                )
                pending.unit_text = " ".join(w for _, w in self.tokens[i : i + used + 1 + more])
                used += 1 + more
        self.flush()
        return used

    def unit_at(self, i: int) -> tuple[int, Unit | None]:
        kind, word = self.tokens[i]
        if kind not in ("word", "sym"):
            return 0, None
        for words, phrase_unit in self.lex.unit_phrases.get(word, ()):
            if tuple(w for _, w in self.tokens[i : i + len(words)]) == words:
                return len(words), phrase_unit
        unit = self.lex.units.get(word)
        if unit is None and kind == "word":
            unit = self.lex.units.get(stem(word, self.stemmer(word)))
        return (1, unit) if unit is not None else (0, None)

    # ------------------------------------------------------------------ words

    def stemmer(self, word: str) -> Stemmer:
        return self.lex.stemmers.get(script_of(word), PLAIN_STEMMER)

    def phrase(self, i: int) -> Phrase | None:
        for phrase in self.lex.phrases.get(self.tokens[i][1], ()):
            end = i + len(phrase.words)
            if end <= len(self.tokens) and all(
                self.tokens[j] == ("word", w)
                for j, w in zip(range(i, end), phrase.words, strict=True)
            ):
                return phrase
        return None

    def word(self, i: int) -> int:
        """Read the word at i (and the words of a phrase starting there); returns words used."""
        token = self.tokens[i][1]
        phrase = self.phrase(i)
        if phrase is not None:
            if phrase.kind != t.STOP:
                self.apply(phrase.kind, phrase.value, " ".join(phrase.words))
            return len(phrase.words)
        memo = self.lex.memo
        found = memo.get(token)
        if found is None:
            found = classify(self.lex, token)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[token] = found
        negations, kind, value = found
        for _ in range(negations):
            self.negate()
        if kind == CONTENT:
            self.add(value, token)
        elif kind != t.STOP:
            self.apply(kind, value, token)
        return 1

    # ------------------------------------------------------------------ CJK

    def match(self, run: str, i: int, table: Mapping[str, object]) -> int:
        """Length of the longest entry of `table` at run[i], or 0."""
        for size in self.lex.cjk_lengths.get(run[i], ()):
            if run[i : i + size] in table:
                return size
        return 0

    def cjk(self, run: str) -> None:
        i, n = 0, len(run)
        while self.pending is not None and i < n:
            size = self.match(run, i, self.lex.cjk_units)
            if not size:
                break
            found = self.lex.cjk_units[run[i : i + size]]
            pending = self.pending
            if isinstance(found, Fraction):
                if pending.scale is not None or (pending.unit is not None and not pending.prefixed):
                    break
                pending.scale = found
                self.add(run[i : i + size], run[i : i + size])
            else:
                if pending.unit is not None:
                    break
                pending.unit, pending.unit_text = found, run[i : i + size]
                i += size
                break
            i += size
        self.flush()
        plain: list[str] = []
        while i < n:
            size = self.match(run, i, self.lex.cjk)
            if size:
                self.plain(plain)
                kind, value = self.lex.cjk[run[i : i + size]]
                if kind != t.STOP:
                    self.apply(kind, value, run[i : i + size])
                i += size
                continue
            ch = run[i]
            han = is_han(ch)
            kept = han or is_katakana(ch)  # other kana is grammar: it ends a word and is dropped
            if plain and (not kept or han != is_han(plain[-1])):
                self.plain(plain)
            if kept:
                plain.append(ch)
            i += 1
        self.plain(plain)

    def plain(self, chars: list[str]) -> None:
        """Kanji/hanzi not in a table as character bigrams; a katakana run as one word."""
        if not chars:
            return
        text = "".join(chars)
        chars.clear()
        if len(text) == 1 or not is_han(text[0]):
            self.add(text, text)
            return
        for j in range(len(text) - 1):
            self.add(text[j : j + 2], text[j : j + 2])

    # ------------------------------------------------------------------ driver

    def run(self) -> None:
        tokens, i, n = self.tokens, 0, len(self.tokens)
        while i < n:
            kind, token = tokens[i]
            if kind == "word":
                if self.pending is not None:
                    used = self.attach(i)
                    if used:
                        i += used
                        continue
                    self.flush()
                self.prefix_dimension = None
                i += self.word(i)
                continue
            if kind == "sym" and self.pending is not None:
                used = self.attach(i)
                if used:
                    i += used
                    continue
            if kind == "num":
                number = parse_number(token) if self.numbers < MAX_QUANTITIES else None
                self.numbers += 1
                if number is None:  # not read as a quantity: a word like any other
                    self.flush()
                    self.add(token, token)
                else:
                    self.number(token, number)
            elif kind == "cjk":
                self.cjk(token)
            elif kind == "end":
                self.sentence_end()
            else:
                self.flush()
                self.prefix_dimension = self.lex.before_number.get(token)
            i += 1
        self.flush()


def tokens_of(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The folded text and its scanned (kind, token) pairs, Arabic words normalized."""
    folded = fold(text)
    tokens = [(match.lastgroup or "", match.group()) for match in scanner().finditer(folded)]
    if _ARABIC.search(folded):
        tokens = [
            (kind, arabic(token))
            if kind == "word" and script_of(token) == ARABIC
            else (kind, token)
            for kind, token in tokens
        ]
        tokens = [(kind, token) for kind, token in tokens if token]  # only harakat: nothing
    return folded, tokens


def analyze(text: str, lex: Lexicon | None = None) -> Passage:
    """Analyze one passage: content words, negations (reported speech excluded), quantities."""
    folded, tokens = tokens_of(text)
    reader = _Reader(lex or lexicon(), tokens)
    reader.run()
    quantities = tuple(reader.quantities)
    values = frozenset((q.dimension, q.value) for q in quantities)
    content = frozenset(reader.content)
    return Passage(
        text=text,
        content=content,
        negations=reader.negations,
        quoted_negations=reader.quoted_negations,
        quantities=quantities,
        values=values,
        dimensions=frozenset(q.dimension for q in quantities),
        surface=reader.surface,
        duplicate_keys=content | {f"={d}={v}" for d, v in values},
        folded=" ".join(folded.split()),
    )
