"""The three-way line merge: a table of cases, conflict markers and invariants (hypothesis)."""

from __future__ import annotations

import random

import pytest
from claimwatch.core.merge import MergeResult, merge, split_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.merge_edits import disjoint_edits

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LT, EQ, GT, BAR = "<<<<<<< ours\n", "=======\n", ">>>>>>> theirs\n", "||||||| base\n"

# (id, base, ours, theirs, merged text, conflict regions)
CASES = [
    (
        "disjoint paragraphs",
        "Intro.\nMore intro.\n\nBody.\nMore body.\n\nEnd.\n",
        "Intro, edited.\nMore intro.\n\nBody.\nMore body.\n\nEnd.\n",
        "Intro.\nMore intro.\n\nBody.\nMore body.\n\nThe end.\nSigned.\n",
        "Intro, edited.\nMore intro.\n\nBody.\nMore body.\n\nThe end.\nSigned.\n",
        0,
    ),
    (
        "same line changed differently",
        "a\nb\nc\n",
        "a\nX\nc\n",
        "a\nY\nc\n",
        f"a\n{LT}X\n{EQ}Y\n{GT}c\n",
        1,
    ),
    ("adjacent lines changed", "a\nb\n", "A\nb\n", "a\nB\n", "A\nB\n", 0),
    ("adjacent lines deleted", "a\nb\nc\n", "b\nc\n", "a\nc\n", "c\n", 0),
    ("change next to a deletion", "a\nb\nc\n", "a\nB\nc\n", "a\nb\n", "a\nB\n", 0),
    (
        "insertion inside a deletion",
        "a\nb\nc\nd\n",
        "a\nb\nX\nc\nd\n",
        "a\nd\n",
        f"a\n{LT}b\nX\nc\n{EQ}{GT}d\n",
        1,
    ),
    (
        "insertion at the start of a deletion",
        "a\nb\nc\nd\n",
        "a\nX\nb\nc\nd\n",
        "a\nd\n",
        "a\nX\nd\n",
        0,
    ),
    (
        "insertion at the end of a deletion",
        "a\nb\nc\nd\n",
        "a\nb\nc\nX\nd\n",
        "a\nd\n",
        "a\nX\nd\n",
        0,
    ),
    ("insertion before a change", "a\nb\nc\n", "a\nB\nc\n", "a\nX\nb\nc\n", "a\nX\nB\nc\n", 0),
    ("insertion after a change", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nX\nc\n", "a\nB\nX\nc\n", 0),
    ("change against deletion", "a\nb\nc\n", "a\nB\nc\n", "a\nc\n", f"a\n{LT}B\n{EQ}{GT}c\n", 1),
    ("deletion against change", "a\nb\nc\n", "a\nc\n", "a\nB\nc\n", f"a\n{LT}{EQ}B\n{GT}c\n", 1),
    (
        "change inside a wider change",
        "a\nb\nc\nd\n",
        "a\nb\nC\nd\n",
        "a\nX\nY\nZ\nd\n",
        f"a\n{LT}b\nC\n{EQ}X\nY\nZ\n{GT}d\n",
        1,
    ),
    (
        "one conflict spans a chain of overlaps",
        "a\nb\nc\nd\ne\n",
        "A\nB\nc\nD\ne\n",
        "a\nX\nY\nZ\ne\n",
        f"{LT}A\nB\nc\nD\n{EQ}a\nX\nY\nZ\n{GT}e\n",
        1,
    ),
    (
        "two separate conflicts",
        "a\nb\nc\n",
        "X\nb\nX\n",
        "Y\nb\nY\n",
        f"{LT}X\n{EQ}Y\n{GT}b\n{LT}X\n{EQ}Y\n{GT}",
        2,
    ),
    ("empty ours deletes everything", "a\nb\n", "", "a\nb\n", "", 0),
    ("empty ours against a change", "a\nb\n", "", "a\nB\n", f"{LT}{EQ}a\nB\n{GT}", 1),
    ("empty theirs deletes everything", "a\nb\n", "a\nb\n", "", "", 0),
    ("empty base, one side adds", "", "x\ny\n", "", "x\ny\n", 0),
    ("empty base, both add the same", "", "x\n", "x\n", "x\n", 0),
    ("empty base, both add differently", "", "x\n", "y\n", f"{LT}x\n{EQ}y\n{GT}", 1),
    ("everything empty", "", "", "", "", 0),
    ("identical edits apply once", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n", "a\nB\nc\n", 0),
    ("identical deletions apply once", "a\nb\nc\n", "a\nc\n", "a\nc\n", "a\nc\n", 0),
    ("edits at start and end", "a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n", "A\nb\nC\n", 0),
    ("insertions at start and end", "a\nb\n", "X\na\nb\n", "a\nb\nY\n", "X\na\nb\nY\n", 0),
    ("no trailing newline on one side", "a\nb\n", "A\nb\n", "a\nb", "A\nb", 0),
    ("no trailing newline anywhere", "a\nb", "A\nb", "a\nB", "A\nB", 0),
    (
        "conflict on a last line without newline",
        "a\nb",
        "a\nX",
        "a\nY",
        f"a\n{LT}X\n{EQ}Y\n{GT}",
        1,
    ),
    ("markers start their own line", "a\n", "x", "y\n", f"{LT}x\n{EQ}y\n{GT}", 1),
    ("insertions at one point, same lines", "a\nb\n", "a\nX\nb\n", "a\nX\nb\n", "a\nX\nb\n", 0),
    (
        "insertions at one point, different lines",
        "a\nb\n",
        "a\nX\nb\n",
        "a\nY\nb\n",
        f"a\n{LT}X\n{EQ}Y\n{GT}b\n",
        1,
    ),
    (
        "lines both sides share stay outside the markers",
        "a\nb\nc\n",
        "a\nP\nX\nS\nc\n",
        "a\nP\nY\nS\nc\n",
        f"a\nP\n{LT}X\n{EQ}Y\n{GT}S\nc\n",
        1,
    ),
    ("CRLF line endings are kept", "a\r\nb\r\n", "A\r\nb\r\n", "a\r\nB\r\n", "A\r\nB\r\n", 0),
    (
        "dropping the final newline against an insertion at the end",
        "a\nb\n",
        "a\nb",
        "a\nb\nc\n",
        f"a\n{LT}b\n{EQ}b\nc\n{GT}",
        1,
    ),
    (
        "insertion after a change that ends without newline",
        "a\nb\nc\n",
        "X\nc\nZ\n",
        "a\nB",
        f"{LT}X\nc\nZ\n{EQ}a\nB\n{GT}",
        1,
    ),
    (
        "shared edge lines are taken once when one side is all shared",
        "a\nb\nc\n",
        "a\nP\nS\nc\n",
        "a\nP\nS\nP\nS\nc\n",
        f"a\nP\nS\n{LT}{EQ}P\nS\n{GT}c\n",
        1,
    ),
    (
        "insertion right after a conflict stays outside it",
        "a\nb\nc\nd\n",
        "A\nB\nc\nX\nd\n",
        "a\nY\nZ\nd\n",
        f"{LT}A\nB\nc\n{EQ}a\nY\nZ\n{GT}X\nd\n",
        1,
    ),
]

DIFF3_CASES = [
    (
        "diff3 shows the base",
        "a\nb\nc\n",
        "a\nX\nc\n",
        "a\nY\nc\n",
        f"a\n{LT}X\n{BAR}b\n{EQ}Y\n{GT}c\n",
    ),
    (
        "diff3 keeps shared lines inside",
        "a\nb\nc\n",
        "a\nP\nX\nc\n",
        "a\nP\nY\nc\n",
        f"a\n{LT}P\nX\n{BAR}b\n{EQ}P\nY\n{GT}c\n",
    ),
    ("diff3 base without newline", "a", "x\n", "y\n", f"{LT}x\n{BAR}a\n{EQ}y\n{GT}"),
    ("diff3 empty base section", "", "x\n", "y\n", f"{LT}x\n{BAR}{EQ}y\n{GT}"),
]


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "text", "conflicts"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_merge_table(base: str, ours: str, theirs: str, text: str, conflicts: int) -> None:
    """Each case merges to the expected text with the expected number of conflict regions."""
    result = merge(base, ours, theirs)
    assert MergeResult(text, conflicts) == result
    assert (conflicts == 0) == result.clean


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "text"),
    [case[1:] for case in DIFF3_CASES],
    ids=[case[0] for case in DIFF3_CASES],
)
def test_diff3_style(base: str, ours: str, theirs: str, text: str) -> None:
    """The diff3 style adds the base lines between `||||||| base` and `=======`."""
    assert MergeResult(text, 1) == merge(base, ours, theirs, style="diff3")


def test_diff3_style_changes_nothing_in_a_clean_merge() -> None:
    """Without conflicts both styles give the same text."""
    assert merge("a\nb\n", "A\nb\n", "a\nB\n") == merge("a\nb\n", "A\nb\n", "a\nB\n", "diff3")


def test_unknown_style_is_refused() -> None:
    """A style other than merge or diff3 raises ValueError naming the style."""
    with pytest.raises(ValueError, match="'zdiff3'"):
        merge("a\n", "b\n", "c\n", style="zdiff3")  # type: ignore[arg-type]


def test_long_file_of_repeated_lines_merges_edits_far_apart() -> None:
    """220 lines, nearly all equal: no line counts as junk, so distant edits do not collide."""
    base = ["u\n", *["x\n"] * 219]
    ours = ["O\n", *base[1:]]
    theirs = [*base[:199], "T\n", *base[200:]]
    merged = "".join(["O\n", *theirs[1:]])
    assert MergeResult(merged, 0) == merge("".join(base), "".join(ours), "".join(theirs))


def test_split_lines_keeps_endings() -> None:
    """Lines keep their endings (a lone CR is no line break); an empty text has no lines."""
    assert ["a\n", "b\r\n", "c\rd"] == split_lines("a\nb\r\nc\rd")
    assert [] == split_lines("")
    assert ["\n", "\n"] == split_lines("\n\n")


# Lines from a small alphabet, so that texts repeat lines and the diffs have choices to make.
_line = st.sampled_from(["a\n", "b\n", "c\n", "\n", "a", "b"])
_text = st.lists(_line, max_size=10).map(lambda lines: "".join(lines))


@st.composite
def _three(draw: st.DrawFn) -> tuple[str, str, str]:
    """A base and two sides edited from it, each maybe without its final newline.

    Related texts make edits touch, overlap and coincide often.
    """
    full = st.sampled_from(["a\n", "b\n", "c\n", "\n"])
    base = draw(st.lists(full, max_size=8))
    texts = [base]
    for _ in range(2):
        side = list(base)
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(side)))
            kind = draw(st.sampled_from(["insert", "change", "delete"]))
            if kind == "insert" or at == len(side):
                side.insert(at, draw(full))
            elif kind == "change":
                side[at] = draw(full)
            else:
                del side[at]
        texts.append(side)
    joined = ["".join(lines) for lines in texts]
    cut = [text[:-1] if text and draw(st.booleans()) else text for text in joined]
    return cut[0], cut[1], cut[2]


def merging_with_an_unchanged_side_returns_the_other_side(base: str, edited: str) -> bool:
    """When one side is the base, the merge is clean and equals the other side."""
    return MergeResult(edited, 0) == merge(base, base, edited) and MergeResult(edited, 0) == merge(
        base, edited, base
    )


def merge_is_symmetric_up_to_marker_order(base: str, ours: str, theirs: str) -> bool:
    """Swapping the sides gives the same conflict count and, when clean, the same text."""
    forward, backward = merge(base, ours, theirs), merge(base, theirs, ours)
    if forward.clean:
        return forward == backward
    return forward.conflicts == backward.conflicts


def a_clean_merge_is_made_of_input_lines(base: str, ours: str, theirs: str) -> bool:
    """A clean merge glues no lines together: each of its lines is a line of some input."""
    result = merge(base, ours, theirs)
    known = {*split_lines(base), *split_lines(ours), *split_lines(theirs)}
    return not result.clean or set(split_lines(result.text)) <= known


def a_clean_merge_of_disjoint_edits_contains_every_edited_line(rng: random.Random) -> bool:
    """Edits that share no base line (touching or not) merge cleanly and keep every new line."""
    edits = disjoint_edits(rng, touching=True)
    result = merge(edits.base, edits.ours, edits.theirs)
    lines = split_lines(result.text)
    return result.clean and all(line in lines for line in edits.added)


@PROPERTY
@given(base=_text, edited=_text)
def test_merging_with_an_unchanged_side_returns_the_other_side(base: str, edited: str) -> None:
    """Property: merging with an unchanged side returns the other side."""
    assert True is merging_with_an_unchanged_side_returns_the_other_side(base, edited)


@PROPERTY
@given(base=_text, ours=_text, theirs=_text)
def test_merge_is_symmetric_up_to_marker_order(base: str, ours: str, theirs: str) -> None:
    """Property: merge is symmetric up to marker order."""
    assert True is merge_is_symmetric_up_to_marker_order(base, ours, theirs)


@PROPERTY
@given(texts=_three())
def test_a_clean_merge_is_made_of_input_lines(texts: tuple[str, str, str]) -> None:
    """Property: a clean merge is made of input lines (a line without newline ends the text)."""
    assert True is a_clean_merge_is_made_of_input_lines(*texts)


@PROPERTY
@given(texts=_three())
def test_merge_of_related_texts_is_symmetric_up_to_marker_order(
    texts: tuple[str, str, str],
) -> None:
    """Property: merge is symmetric up to marker order, on sides edited from the base."""
    assert True is merge_is_symmetric_up_to_marker_order(*texts)


@PROPERTY
@given(rng=st.randoms(use_true_random=False))
def test_a_clean_merge_of_disjoint_edits_contains_every_edited_line(rng: random.Random) -> None:
    """Property: a clean merge of disjoint edits contains every edited line."""
    assert True is a_clean_merge_of_disjoint_edits_contains_every_edited_line(rng)
