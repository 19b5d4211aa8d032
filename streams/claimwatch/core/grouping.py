"""Near-duplicate values (a `text` field's passages) become one lineage: connected components."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import combinations

from claimwatch.core.entry import ClaimEntry, by_strength


def merge_near_duplicates(
    entries: list[ClaimEntry], duplicate: Callable[[Hashable, Hashable], bool]
) -> None:
    """Give each connected component of near-duplicates one lineage: its strongest claim's.

    Claims that already share a lineage are connected too, so a passage that duplicates any
    claim of a lineage joins that whole lineage. A chain of near-duplicates is one component
    even when its ends are not near-duplicates of each other.
    """
    if sum(isinstance(e.canon, str) for e in entries) < 2:
        return
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        parent[find(i)] = find(first.setdefault(entry.lineage, i))
    texts = [i for i, e in enumerate(entries) if isinstance(e.canon, str)]
    for i, j in combinations(texts, 2):
        if find(i) != find(j) and duplicate(entries[i].canon, entries[j].canon):
            parent[find(i)] = find(j)
    components: dict[int, list[ClaimEntry]] = {}
    for i, entry in enumerate(entries):
        components.setdefault(find(i), []).append(entry)
    for members in components.values():
        if len({e.lineage for e in members}) > 1:
            lineage = by_strength(members)[0].lineage
            for entry in members:
                entry.lineage = lineage
