"""Differential test: every semantics against python-argumentation (MIT) on generated frameworks."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

from claimwatch.core.argue import Framework, acceptance, named_extensions
from py_arg.abstract_argumentation_classes.abstract_argumentation_framework import (
    AbstractArgumentationFramework,
)
from py_arg.abstract_argumentation_classes.argument import Argument
from py_arg.abstract_argumentation_classes.defeat import Defeat
from py_arg.algorithms.semantics.get_complete_extensions import get_complete_extensions
from py_arg.algorithms.semantics.get_grounded_extension import get_grounded_extension
from py_arg.algorithms.semantics.get_preferred_extensions import get_preferred_extensions
from py_arg.algorithms.semantics.get_stable_extensions import get_stable_extensions

SEMANTICS = ("grounded", "complete", "preferred", "stable")
Attacks = list[tuple[int, int]]


def _random(rng: random.Random, n: int) -> Attacks:
    density = rng.choice((0.05, 0.1, 0.2, 0.3, 0.5))
    return [(a, b) for a in range(n) for b in range(n) if rng.random() < density]


def _no_self(rng: random.Random, n: int) -> Attacks:
    return [(a, b) for a, b in _random(rng, n) if a != b]


def _cycles(rng: random.Random, n: int) -> Attacks:
    """Disjoint cycles of random lengths plus a few chords: odd and even cycles, reinstatement."""
    order = list(range(n))
    rng.shuffle(order)
    attacks: Attacks = []
    start = 0
    while start < n:
        length = rng.randint(1, max(1, n - start))
        ring = order[start : start + length]
        attacks += [(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring)) if len(ring) > 1]
        start += length
    attacks += [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 3))]
    return attacks


def _symmetric(rng: random.Random, n: int) -> Attacks:
    """Mutual attacks only (plus the odd one-way edge): many complete and preferred extensions."""
    attacks: Attacks = []
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < 0.3:
                attacks += [(a, b), (b, a)] if rng.random() < 0.85 else [(a, b)]
    return attacks


GENERATORS: tuple[Callable[[random.Random, int], Attacks], ...] = (
    _random,
    _no_self,
    _cycles,
    _symmetric,
)


def _reference(n: int, attacks: Iterable[tuple[int, int]]) -> dict[str, list[list[str]]]:
    arguments = [Argument(str(i)) for i in range(n)]
    framework = AbstractArgumentationFramework(
        "generated", arguments, [Defeat(arguments[a], arguments[b]) for a, b in attacks]
    )

    def named(extensions: Iterable[Iterable[Any]]) -> list[list[str]]:
        return sorted(sorted((arg.name for arg in ext), key=int) for ext in extensions)

    return {
        "grounded": named([get_grounded_extension(framework)]),
        "complete": named(get_complete_extensions(framework)),
        "preferred": named(get_preferred_extensions(framework)),
        "stable": named(get_stable_extensions(framework)),
    }


def _sort_lists(extensions: list[list[str]]) -> list[list[str]]:
    return sorted(extensions, key=lambda ext: [int(name) for name in ext])


def test_every_semantics_matches_the_reference_on_thousands_of_frameworks() -> None:
    """3 200 generated frameworks of 0..10 arguments: identical extensions for all semantics."""
    rng = random.Random(20260914)
    checked = 0
    mismatches: list[str] = []
    for round_ in range(800):
        for generator in GENERATORS:
            n = rng.randint(0, 10) if round_ % 4 else rng.randint(0, 5)
            attacks = sorted(set(generator(rng, n))) if n else []
            framework = Framework.from_indices([str(i) for i in range(n)], attacks)
            expected = _reference(n, attacks)
            for semantics in SEMANTICS:
                actual = named_extensions(framework, semantics)
                if _sort_lists(expected[semantics]) != actual:
                    mismatches.append(f"{semantics} n={n} attacks={attacks}")
            checked += 1
    assert [] == mismatches
    assert 3200 == checked


def test_acceptance_matches_the_reference_extensions() -> None:
    """Credulous and skeptical acceptance equal the union and intersection of the reference's."""
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 9)
        attacks = sorted(set(_random(rng, n)))
        framework = Framework.from_indices([str(i) for i in range(n)], attacks)
        reference = _reference(n, attacks)
        for semantics in ("preferred", "stable"):
            found = [set(ext) for ext in reference[semantics]]
            union = set().union(*found) if found else set()
            common = set(map(str, range(n))).intersection(*found)
            expected = (sorted(union, key=int), sorted(common, key=int))
            result = acceptance(framework, semantics)
            assert expected == (result.credulous, result.skeptical)
        result = acceptance(framework, "complete")
        union = set().union(*map(set, reference["complete"]))
        assert (sorted(union, key=int), reference["grounded"][0]) == (
            result.credulous,
            result.skeptical,
        )
