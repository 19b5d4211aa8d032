"""Dung argumentation frameworks: named arguments and attacks held as index adjacency lists."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class FrameworkError(ValueError):
    """A framework that cannot be built, e.g. an attack naming an unknown argument."""


def name_key(name: str) -> tuple[int, int, str]:
    """Sort key of argument names: ASCII-digit names by value first, then the rest by code point."""
    if name.isascii() and name.isdigit():
        return (0, int(name), name)
    return (1, 0, name)


@dataclass(frozen=True, slots=True, eq=False)
class Framework:
    """Arguments sorted by `name_key`; argument i is `names[i]`; attacks as adjacency lists.

    `attackers[i]` and `targets[i]` are ascending, without repeats; a self-attack appears in both.
    Build one with `Framework.build` (names) or `Framework.from_indices` (already indexed).
    """

    names: tuple[str, ...]
    attackers: tuple[tuple[int, ...], ...]
    targets: tuple[tuple[int, ...], ...]

    @classmethod
    def build(cls, arguments: Iterable[str], attacks: Iterable[tuple[str, str]]) -> Framework:
        """A framework from argument names and (attacker, attacked) pairs of those names.

        Repeated arguments and attacks count once; an attack naming an unknown argument raises
        FrameworkError (never dropped silently).
        """
        names = sorted(set(arguments), key=name_key)
        for name in names:
            if not isinstance(name, str) or not name:
                raise FrameworkError(f"argument names must be non-empty strings, got {name!r}")
        index = {name: i for i, name in enumerate(names)}
        pairs: list[tuple[int, int]] = []
        for attacker, attacked in attacks:
            a, b = index.get(attacker), index.get(attacked)
            if a is None or b is None:
                unknown = attacker if a is None else attacked
                raise FrameworkError(
                    f"attack ({attacker!r}, {attacked!r}) names unknown argument {unknown!r}"
                )
            pairs.append((a, b))
        return cls.from_indices(names, pairs)

    @classmethod
    def from_indices(cls, names: Sequence[str], attacks: Iterable[tuple[int, int]]) -> Framework:
        """A framework from names already in `name_key` order and attacks as index pairs."""
        n = len(names)
        ordered = tuple(names)
        keys = list(map(name_key, ordered))
        for (key, earlier), (next_key, later) in itertools.pairwise(
            zip(keys, ordered, strict=True)
        ):
            if key >= next_key:
                raise FrameworkError(f"names must be unique and sorted: {earlier!r}, {later!r}")
        outgoing: list[list[int]] = [[] for _ in range(n)]
        for a, b in attacks:
            if not (0 <= a < n and 0 <= b < n):
                raise FrameworkError(f"attack ({a}, {b}) names an argument outside 0..{n - 1}")
            outgoing[a].append(b)
        # targets first, in one pass, so they lie together in memory (grounded walks only them)
        targets = tuple(tuple(sorted(set(row)) if len(row) > 1 else row) for row in outgoing)
        del outgoing
        incoming: list[list[int]] = [[] for _ in range(n)]
        for a, row in enumerate(targets):
            for b in row:
                incoming[b].append(a)  # a ascends, so every incoming list ends up ascending
        return cls(ordered, tuple(map(tuple, incoming)), targets)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        """The index of an argument; FrameworkError when there is no such argument."""
        lo, hi, key = 0, len(self.names), name_key(name)
        while lo < hi:
            mid = (lo + hi) // 2
            if name_key(self.names[mid]) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo == len(self.names) or self.names[lo] != name:
            raise FrameworkError(f"unknown argument {name!r}")
        return lo

    def attack_pairs(self) -> list[tuple[str, str]]:
        """Every attack as (attacker, attacked) names, sorted by attacker then attacked."""
        return [(self.names[a], self.names[b]) for a, row in enumerate(self.targets) for b in row]

    def attack_count(self) -> int:
        """How many distinct attacks the framework has."""
        return sum(len(row) for row in self.targets)

    def self_attacking(self) -> list[int]:
        """Indices of the arguments that attack themselves."""
        return [a for a, row in enumerate(self.targets) if a in row]

    def named(self, indices: Iterable[int]) -> list[str]:
        """Names of a set of argument indices, in argument order."""
        return [self.names[i] for i in sorted(indices)]
