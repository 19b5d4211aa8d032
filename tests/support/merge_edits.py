"""Generated three-way merge inputs: unique base lines and edits of both sides far apart."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Edits:
    """A base and two edited sides; `added` holds every line either side wrote."""

    base: str
    ours: str
    theirs: str
    added: tuple[str, ...]


def _apply(lines: list[str], edits: list[tuple[int, int, list[str]]]) -> str:
    """Apply (start, end, replacement) edits, given in base order, to a copy of the lines."""
    out = list(lines)
    for start, end, new in reversed(edits):
        out[start:end] = new
    return "".join(out)


def disjoint_edits(rng: random.Random, max_lines: int = 14, touching: bool = False) -> Edits:
    """Edits (change, delete, insert) sharing no base line.

    Without `touching` an unchanged base line separates any two; with it, edits of the two
    sides may also abut (a change right after a change, an insertion right before or after
    a change of the other side), which git reports as a conflict and `merge` does not.
    """
    size = rng.randint(0, max_lines)
    base = [f"line{i}\n" for i in range(size)]
    sides: dict[bool, list[tuple[int, int, list[str]]]] = {True: [], False: []}
    start = rng.randint(0, 2)
    inserted_at, changed = -1, (-1, False)  # the last insertion; (end, side) of the last change
    while start <= size:
        end = start if rng.random() < 0.3 else min(size, start + rng.randint(1, 3))
        ours = rng.random() < 0.5
        if inserted_at == start and (start == end or changed == (start, ours)):
            start += 1  # two insertions at one point, or one inside a change of the other side
            continue
        count = rng.randint(1, 3) if start == end else rng.randint(0, 3)
        tag = "o" if ours else "t"
        sides[ours].append((start, end, [f"{tag}{start}_{j}\n" for j in range(count)]))
        if start == end:
            inserted_at = start
        else:
            changed = (end, ours)
        start = end + rng.randint(0 if touching else 1, 4)
    added = tuple(line for edits in sides.values() for _, _, new in edits for line in new)
    texts = ["".join(base), _apply(base, sides[True]), _apply(base, sides[False])]
    untouched_end = all(text.splitlines(keepends=True)[-1:] == base[-1:] for text in texts)
    if base and untouched_end and rng.random() < 0.3:  # sometimes no newline after the last line
        texts = [text[:-1] for text in texts]
    return Edits(texts[0], texts[1], texts[2], added)


def same_line_conflict(rng: random.Random) -> Edits:
    """Disjoint edits plus one base line that both sides change to different text."""
    while True:
        edits = disjoint_edits(rng)
        lines = edits.base.splitlines(keepends=True)
        ours, theirs = edits.ours.splitlines(keepends=True), edits.theirs.splitlines(keepends=True)
        kept = [line for line in lines if line in ours and line in theirs]
        if kept:
            break
    target = rng.choice(kept)
    ours[ours.index(target)] = "OURS " + target
    theirs[theirs.index(target)] = "THEIRS " + target
    added = (*edits.added, "OURS " + target, "THEIRS " + target)
    return Edits(edits.base, "".join(ours), "".join(theirs), added)
