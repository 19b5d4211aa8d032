"""Extensions under grounded, complete, preferred and stable semantics, and acceptance."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from claimwatch.core.argue.framework import Framework
from claimwatch.core.argue.grounded import IN, OUT, UNDEC, grounded_labels
from claimwatch.core.argue.search import ALL, Budget, LabellingSearch, SearchLimit


class Semantics(StrEnum):
    """The semantics an extension can be computed under."""

    GROUNDED = "grounded"
    COMPLETE = "complete"
    PREFERRED = "preferred"
    STABLE = "stable"


@dataclass(frozen=True, slots=True)
class Acceptance:
    """Arguments in at least one extension (credulous) and in every extension (skeptical)."""

    credulous: list[str]
    skeptical: list[str]


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much one extensions computation may do: SearchLimit beyond either bound.

    Complete, preferred and stable extensions can be exponentially many in the number of
    arguments, and finding one can take exponentially many search steps; grounded is linear
    and never limited.
    """

    max_extensions: int = 16
    max_steps: int = 100_000


def extensions(
    framework: Framework, semantics: Semantics | str, bounds: Bounds | None = None
) -> list[tuple[int, ...]]:
    """The extensions as ascending index tuples, sorted; the same input gives the same list.

    The grounded labelling is computed first (linear); every complete labelling agrees with it
    on its IN and OUT arguments, so the search only labels the UNDEC rest, one weakly connected
    component at a time, and combines the components' results. With `bounds`, more than
    `max_extensions` extensions or more than `max_steps` search steps raise SearchLimit.
    """
    kind = Semantics(semantics)
    labels = grounded_labels(framework)
    base = [i for i, label in enumerate(labels) if label == IN]
    if kind is Semantics.GROUNDED:
        return [tuple(base)]
    budget = Budget(bounds.max_steps) if bounds is not None else None
    most = bounds.max_extensions if bounds is not None else None
    per_component: list[list[list[int]]] = []
    combinations = 1
    for component in _components(framework, labels):
        found = _component_extensions(framework, component, kind, budget, most)
        if not found:
            return []  # no stable extension in one component: none at all
        per_component.append(found)
        combinations *= len(found)
        if most is not None and combinations > most:
            raise SearchLimit(f"more than {most} {kind} extensions")
    combined = [
        tuple(sorted(itertools.chain(base, *parts))) for parts in itertools.product(*per_component)
    ]
    return sorted(combined)


def named_extensions(framework: Framework, semantics: Semantics | str) -> list[list[str]]:
    """The extensions as sorted lists of argument names, in a sorted list."""
    return [[framework.names[i] for i in ext] for ext in extensions(framework, semantics)]


def acceptance(framework: Framework, semantics: Semantics | str) -> Acceptance:
    """Credulously and skeptically accepted arguments, each a sorted list of names.

    Complete semantics: credulous equals preferred's (every complete extension lies in a
    preferred one) and skeptical equals grounded. With no extension at all (stable semantics
    can have none) every argument is skeptically accepted and none credulously, as in ICCMA.
    """
    kind = Semantics(semantics)
    if kind is Semantics.COMPLETE:
        credulous = acceptance(framework, Semantics.PREFERRED).credulous
        skeptical = acceptance(framework, Semantics.GROUNDED).skeptical
        return Acceptance(credulous, skeptical)
    found = extensions(framework, kind)
    union: set[int] = set().union(*found) if found else set()
    common: set[int] = set(range(len(framework)))
    for ext in found:
        common.intersection_update(ext)
    return Acceptance(framework.named(union), framework.named(common))


def _components(framework: Framework, labels: bytearray) -> Iterator[list[int]]:
    """Weakly connected components of the UNDEC arguments, each ascending, by first member."""
    parent = {i: i for i, label in enumerate(labels) if label == UNDEC}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a in parent:
        for b in framework.targets[a]:
            if b in parent:
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in sorted(parent):
        groups.setdefault(root(i), []).append(i)
    for first in sorted(groups):
        yield groups[first]


def _component_extensions(
    framework: Framework,
    component: list[int],
    kind: Semantics,
    budget: Budget | None = None,
    most: int | None = None,
) -> list[list[int]]:
    """The IN sets (global indices) of one component's labellings under `kind`.

    More than `most` of them raise SearchLimit (None: no bound).
    """
    local = {g: i for i, g in enumerate(component)}
    attackers = [[local[b] for b in framework.attackers[g] if b in local] for g in component]
    targets = [[local[c] for c in framework.targets[g] if c in local] for g in component]
    search = LabellingSearch(attackers, targets, budget)

    def ins(labelling: bytearray) -> list[int]:
        return [component[i] for i, label in enumerate(labelling) if label == IN]

    if kind is Semantics.PREFERRED:
        return [ins(found) for found in _preferred(search, len(component), most)]
    allowed = ALL if kind is Semantics.COMPLETE else IN | OUT
    found = list(itertools.islice(search.labellings(search.initial(allowed)), _plus_one(most)))
    if most is not None and len(found) > most:
        raise SearchLimit(f"more than {most} {kind} extensions")
    return [ins(labelling) for labelling in found]


def _plus_one(most: int | None) -> int | None:
    return None if most is None else most + 1


def _preferred(search: LabellingSearch, size: int, most: int | None = None) -> list[bytearray]:
    """Maximal complete labellings (by IN set), found one at a time.

    Find any complete labelling not inside a preferred extension found so far, then grow it
    (fix its IN arguments, ask for one more IN) until it cannot grow: that is a new preferred
    extension; exclude it and its subsets by a clause "some argument outside it is IN".
    """
    grow = LabellingSearch(search.attackers, search.targets, search.budget)
    found: list[bytearray] = []
    while True:
        current = search.first(search.initial(ALL))
        if current is None:
            return found
        if most is not None and len(found) >= most:
            raise SearchLimit(f"more than {most} preferred extensions")
        while True:
            inside = [i for i in range(size) if current[i] == IN]
            outside = [i for i in range(size) if current[i] != IN and current[i] != OUT]
            if not outside:
                break
            domains = grow.initial(ALL)
            for i in inside:
                domains[i] = IN
            grow.add_clause(outside)
            bigger = grow.first(domains)
            grow.pop_clause()
            if bigger is None:
                break
            current = bigger
        found.append(current)
        search.add_clause([i for i in range(size) if current[i] != IN])
