"""Three-way line merge (diff3) with git-style conflict markers; edits on adjacent lines merge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

Style = Literal["merge", "diff3"]
STYLES: tuple[Style, ...] = ("merge", "diff3")

OURS_MARKER = "<<<<<<< ours\n"
BASE_MARKER = "||||||| base\n"
SPLIT_MARKER = "=======\n"
THEIRS_MARKER = ">>>>>>> theirs\n"


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged text and how many conflict regions (marked git-style) it holds."""

    text: str
    conflicts: int

    @property
    def clean(self) -> bool:
        """True when no conflict region remains."""
        return self.conflicts == 0


@dataclass(frozen=True, slots=True)
class _Hunk:
    """One side's change: base lines [start, end) become `lines` (start == end: an insertion)."""

    start: int
    end: int
    lines: tuple[str, ...]
    ours: bool

    @property
    def point(self) -> bool:
        """An insertion: it touches no base line, only the gap before base line `start`."""
        return self.start == self.end

    @property
    def closed_end(self) -> bool:
        """An insertion, or a change that ends its side without a final newline."""
        return self.point or (bool(self.lines) and not self.lines[-1].endswith("\n"))


@dataclass(slots=True)
class _Cluster:
    """Hunks of both sides tied together by overlap; base lines [start, end) are their span."""

    start: int
    end: int
    end_closed: bool
    hunks: list[_Hunk]


def split_lines(text: str) -> list[str]:
    """Lines of `text` with their endings kept; only a final line may lack its newline."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _hunks(base: Sequence[str], side: Sequence[str], ours: bool) -> list[_Hunk]:
    """The changes turning base into side; each pair is separated by at least one equal line."""
    matcher = SequenceMatcher(None, base, side, autojunk=False)
    return [
        _Hunk(i1, i2, tuple(side[j1:j2]), ours)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _touches(cluster: _Cluster, hunk: _Hunk) -> bool:
    """Whether the hunk shares a base line or an insertion point with the cluster's span.

    A change of base lines [s, e) is the open interval (s, e) and an insertion at p the point
    p; two hunks conflict exactly when these sets meet. A change that leaves its side without
    a final newline is closed at its end (s, e], so that nothing is glued to that last line.
    Hunks come sorted by start, an insertion before a change that starts at the same line,
    so meeting the span suffices.
    """
    if hunk.point:
        return hunk.start < cluster.end or (hunk.start == cluster.end and cluster.end_closed)
    return hunk.start < cluster.end


def _clusters(hunks: list[_Hunk]) -> list[_Cluster]:
    """Group the hunks of both sides into runs that overlap (transitively)."""
    clusters: list[_Cluster] = []
    for hunk in sorted(hunks, key=lambda h: (h.start, not h.point)):
        if clusters and _touches(clusters[-1], hunk):
            last = clusters[-1]
            if hunk.end > last.end:  # an insertion that joins never reaches past the span
                last.end, last.end_closed = hunk.end, hunk.closed_end
            last.hunks.append(hunk)
        else:
            clusters.append(_Cluster(hunk.start, hunk.end, hunk.closed_end, [hunk]))
    return clusters


def _apply(base: Sequence[str], cluster: _Cluster, ours: bool) -> list[str]:
    """The cluster's base span with one side's hunks applied."""
    out: list[str] = []
    at = cluster.start
    for hunk in cluster.hunks:
        if hunk.ours is ours:
            out.extend(base[at : hunk.start])
            out.extend(hunk.lines)
            at = hunk.end
    out.extend(base[at : cluster.end])
    return out


def _common_affixes(left: list[str], right: list[str]) -> tuple[int, int]:
    """Lengths of the common leading and trailing lines of two lists, never overlapping."""
    limit = min(len(left), len(right))
    head = 0
    while head < limit and left[head] == right[head]:
        head += 1
    tail = 0
    while tail < limit - head and left[-1 - tail] == right[-1 - tail]:
        tail += 1
    return head, tail


def _section(lines: list[str]) -> list[str]:
    """A conflict section, ending in a newline so that the next marker starts its own line."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines


def _conflict(ours: list[str], base: list[str], theirs: list[str], style: Style) -> list[str]:
    """The marked conflict: in merge style, lines both sides share at its edges stay outside."""
    head = tail = 0
    if style == "merge":
        head, tail = _common_affixes(ours, theirs)
    out = [*ours[:head], OURS_MARKER, *_section(ours[head : len(ours) - tail])]
    if style == "diff3":
        out += [BASE_MARKER, *_section(base)]
    out += [SPLIT_MARKER, *_section(theirs[head : len(theirs) - tail]), THEIRS_MARKER]
    return out + ours[len(ours) - tail :]


def merge(base: str, ours: str, theirs: str, style: Style = "merge") -> MergeResult:
    """Merge two edits of `base` line by line; overlapping different changes get markers.

    Changes conflict only when they share a base line, when both sides insert different lines
    at one point, or when an insertion falls strictly inside a range the other side changes.
    Changes on adjacent lines merge; an insertion goes before a change it touches at the
    change's first line and after one it touches at the end; the same change on both sides
    applies once.
    """
    if style not in STYLES:
        raise ValueError(f"style: {style!r} is not one of {', '.join(STYLES)}")
    base_lines = split_lines(base)
    hunks = _hunks(base_lines, split_lines(ours), True)
    hunks += _hunks(base_lines, split_lines(theirs), False)
    out: list[str] = []
    conflicts = 0
    at = 0
    for cluster in _clusters(hunks):
        out.extend(base_lines[at : cluster.start])
        mine = _apply(base_lines, cluster, True)
        other = _apply(base_lines, cluster, False)
        if mine == other or all(not hunk.ours for hunk in cluster.hunks):
            out.extend(other)
        elif all(hunk.ours for hunk in cluster.hunks):
            out.extend(mine)
        else:
            conflicts += 1
            out.extend(_conflict(mine, base_lines[cluster.start : cluster.end], other, style))
        at = cluster.end
    out.extend(base_lines[at:])
    return MergeResult("".join(out), conflicts)
