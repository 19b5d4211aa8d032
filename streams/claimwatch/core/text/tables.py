"""The comparator's word tables: loaded once from the JSON files in `data/`, merged, checked."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any, Final

from claimwatch.core.text.script import ARABIC, CJK, arabic, fold, script_of

#: The language files, in load order.
LANGUAGES: Final = ("en", "ta", "te", "ar", "ja", "zh")

STOP: Final = "stop"
NEG: Final = "neg"
BEFORE: Final = "before"  # opens reported speech: negations after it are a third party's
AFTER: Final = "after"  # closes reported speech: negations before it are a third party's
PLAIN: Final = "plain"
POLAR: Final = "polar"  # a polar word; the value is its lemma
LEXNEG: Final = "lexneg"  # a negative word (prohibited); the value is the lemma it negates
NUMBER: Final = "number"

#: Categories of a language file whose words are looked up exactly, with their kind.
_CATEGORIES: Final = (
    ("stopwords", STOP),
    ("not_negations", STOP),
    ("negations", NEG),
    ("reported_before", BEFORE),
    ("reported_after", AFTER),
    ("plain", PLAIN),
)


class TableError(ValueError):
    """A data file that is malformed or contradicts another one."""


@dataclass(frozen=True, slots=True)
class Unit:
    """A unit: its dimension and its factor to the dimension's base unit."""

    dimension: str
    factor: Fraction


@dataclass(frozen=True, slots=True)
class Stemmer:
    """How the words of one script are reduced for comparison."""

    plural_s: bool = False
    lemma_suffixes: tuple[tuple[str, str], ...] = ()
    double_consonant: bool = False
    suffixes: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    negative_suffixes: tuple[str, ...] = ()
    prefix_match: bool = False
    min_stem: int = 2


@dataclass(frozen=True, slots=True)
class Phrase:
    """A multi-word entry (`according to`, `per cent`): its words and what it stands for."""

    words: tuple[str, ...]
    kind: str
    value: str


@dataclass(slots=True)
class Lexicon:
    """Every table merged across languages, built once by `lexicon()`; only `memo` changes."""

    words: dict[str, tuple[str, str]] = field(default_factory=dict)
    phrases: dict[str, list[Phrase]] = field(default_factory=dict)
    prefixes: dict[str, tuple[str, str]] = field(default_factory=dict)
    prefix_max: int = 0
    antonyms: dict[str, frozenset[str]] = field(default_factory=dict)
    negative_prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    scales: dict[str, Fraction] = field(default_factory=dict)
    units: dict[str, Unit] = field(default_factory=dict)
    unit_phrases: dict[str, list[tuple[tuple[str, ...], Unit]]] = field(default_factory=dict)
    before_number: dict[str, str] = field(default_factory=dict)
    per: frozenset[str] = frozenset()
    cjk: dict[str, tuple[str, str]] = field(default_factory=dict)
    cjk_units: dict[str, Unit | Fraction] = field(default_factory=dict)
    cjk_lengths: dict[str, tuple[int, ...]] = field(default_factory=dict)
    stemmers: dict[str, Stemmer] = field(default_factory=dict)
    #: Memo of the tokenizer's per-word classification (a cache: results never depend on it).
    memo: dict[str, tuple[int, str, str]] = field(default_factory=dict)


def normal(word: str) -> str:
    """A table entry as the tokenizer sees words: folded, Arabic letters unified."""
    word = fold(word).strip()
    return arabic(word) if word and script_of(word) == ARABIC else word


def _read(name: str) -> dict[str, Any]:
    text = (
        resources.files("claimwatch.core.text").joinpath("data", f"{name}.json").read_text("utf-8")
    )
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TableError(f"{name}.json: expected an object at the top")
    return data


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TableError(f"{where}: expected a list of strings")
    return list(value)


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TableError(f"{where}: expected an object")
    return value


class _Builder:
    def __init__(self) -> None:
        self.lex = Lexicon()
        self.antonyms: dict[str, set[str]] = {}
        self.cjk_keys: set[str] = set()

    def put(self, entry: str, kind: str, value: str, where: str) -> None:
        """Record one entry; the same word with two meanings is a data error."""
        word = normal(entry)
        if not word:
            raise TableError(f"{where}: empty entry")
        if script_of(word) == CJK:
            self._put_into(self.lex.cjk, word, (kind, value), where)
            self.cjk_keys.add(word)
            return
        words = word.split()
        if len(words) > 1:
            self.lex.phrases.setdefault(words[0], []).append(Phrase(tuple(words), kind, value))
            return
        self._put_into(self.lex.words, word, (kind, value), where)

    def put_prefix(self, entry: str, kind: str, lemma: str, where: str) -> None:
        """A polar stem matched as the start of a word (scripts that inflect by suffix)."""
        word = normal(entry)
        forms = {word}
        stemmer = self.lex.stemmers.get(script_of(word))
        if stemmer is not None:
            forms.update(word[len(p) :] for p in stemmer.prefixes if word.startswith(p))
        for form in forms:
            if len(form) >= 2:
                self._put_into(self.lex.prefixes, form, (kind, lemma), where)
                self.lex.prefix_max = max(self.lex.prefix_max, len(form))

    @staticmethod
    def _put_into(
        table: dict[str, tuple[str, str]], word: str, meaning: tuple[str, str], where: str
    ) -> None:
        known = table.get(word)
        if known is not None and known != meaning:
            raise TableError(f"{where}: {word!r} is already {known[0]} {known[1]!r}")
        table[word] = meaning

    def language(self, name: str) -> None:
        data = _read(name)
        where = f"{name}.json"
        script = data.get("script")
        if not isinstance(script, str):
            raise TableError(f"{where}: script: expected a string")
        if script != CJK:
            self.lex.stemmers[script] = _stemmer(_mapping(data.get("stem", {}), f"{where}: stem"))
        prefix_match = script != CJK and self.lex.stemmers[script].prefix_match
        for key, kind in _CATEGORIES:
            for entry in _strings(data.get(key, []), f"{where}: {key}"):
                self.put(entry, kind, "", f"{where}: {key}")
        polar: list[tuple[str, str, str]] = []  # (form, kind, lemma)
        for lemma, forms in _mapping(data.get("lemmas", {}), f"{where}: lemmas").items():
            polar += [(form, POLAR, normal(lemma)) for form in _strings(forms, f"{where}: lemmas")]
        for form, lemma in _mapping(data.get("lexical_negatives", {}), where).items():
            polar.append((form, LEXNEG, normal(str(lemma))))
        for pair in data.get("antonyms", []):
            sides = _strings(pair, f"{where}: antonyms")
            if len(sides) != 2:
                raise TableError(f"{where}: antonyms: {pair!r} is not a pair")
            left, right = (side.split("|") for side in sides)
            a, b = normal(left[0]), normal(right[0])
            self.antonyms.setdefault(a, set()).add(b)
            self.antonyms.setdefault(b, set()).add(a)
            polar += [(form, POLAR, a) for form in left] + [(form, POLAR, b) for form in right]
        for form, kind, lemma in polar:
            if prefix_match:
                self.put_prefix(form, kind, lemma, f"{where}: polar words")
            else:
                self.put(form, kind, lemma, f"{where}: polar words")
        for prefix, suffixes in _mapping(data.get("negative_prefixes", {}), where).items():
            self.lex.negative_prefixes[prefix] = tuple(_strings(suffixes, f"{where}: prefixes"))
        for word, number in _mapping(data.get("numbers", {}), where).items():
            self.put(word, NUMBER, str(Fraction(str(number))), f"{where}: numbers")

    def units(self) -> None:
        data = _read("units")
        where = "units.json"
        for dimension, forms in _mapping(data.get("dimensions"), f"{where}: dimensions").items():
            for form, factor in _mapping(forms, f"{where}: {dimension}").items():
                unit = Unit(dimension, Fraction(str(factor)))
                self._unit(form, unit, f"{where}: {dimension}")
        for form, factor in _mapping(data.get("scales"), f"{where}: scales").items():
            word = normal(form)
            target = self.lex.cjk_units if script_of(word) == CJK else self.lex.scales
            if word in target:
                raise TableError(f"{where}: scales: {word!r} twice")
            target[word] = Fraction(str(factor))
            if script_of(word) == CJK:
                self.cjk_keys.add(word)
        for form, dimension in _mapping(data.get("before_number"), where).items():
            self.lex.before_number[normal(form)] = str(dimension)
        self.lex.per = frozenset(normal(w) for w in _strings(data.get("per"), f"{where}: per"))

    def _unit(self, form: str, unit: Unit, where: str) -> None:
        word = normal(form)
        words = word.split()
        if script_of(word) == CJK:
            target: dict[str, Any] = self.lex.cjk_units
            self.cjk_keys.add(word)
        elif len(words) > 1:
            self.lex.unit_phrases.setdefault(words[0], []).append((tuple(words), unit))
            return
        else:
            target = self.lex.units
        if word in target:
            raise TableError(f"{where}: unit {word!r} defined twice")
        target[word] = unit

    def finish(self) -> Lexicon:
        lex = self.lex
        lex.antonyms = {k: frozenset(v) for k, v in self.antonyms.items()}
        for entries in lex.phrases.values():
            entries.sort(key=lambda p: -len(p.words))
        for units in lex.unit_phrases.values():
            units.sort(key=lambda u: -len(u[0]))
        lengths: dict[str, set[int]] = {}
        for key in self.cjk_keys:
            lengths.setdefault(key[0], set()).add(len(key))
        lex.cjk_lengths = {ch: tuple(sorted(ls, reverse=True)) for ch, ls in lengths.items()}
        return lex


def _stemmer(data: Mapping[str, Any]) -> Stemmer:
    def longest_first(values: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted((normal(v) for v in values), key=lambda s: (-len(s), s)))

    pairs = data.get("lemma_suffixes", [])
    return Stemmer(
        plural_s=bool(data.get("plural_s", False)),
        lemma_suffixes=tuple((str(a), str(b)) for a, b in pairs),
        double_consonant=bool(data.get("double_consonant", False)),
        suffixes=longest_first(_strings(data.get("suffixes", []), "stem.suffixes")),
        prefixes=longest_first(_strings(data.get("prefixes", []), "stem.prefixes")),
        negative_suffixes=longest_first(
            _strings(data.get("negative_suffixes", []), "stem.negative_suffixes")
        ),
        prefix_match=bool(data.get("prefix_match", False)),
        min_stem=int(data.get("min_stem", 2)),
    )


@functools.cache
def lexicon() -> Lexicon:
    """All tables, loaded once; raises TableError naming the file and entry on bad data."""
    builder = _Builder()
    for name in LANGUAGES:
        builder.language(name)
    builder.units()
    return builder.finish()
