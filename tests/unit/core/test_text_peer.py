"""The CiteNexus peer suite, read from ../shared/peers/: every pair as labelled, gaps closed."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from claimwatch.core.text import compare

from tests.support.paths import REPO

ROOT = REPO
PEER = ROOT.parent / "shared" / "peers" / "citenexus" / "conflict.json"
#: Labels of the pairs that record the peer's own gaps: claimwatch must detect these.
GAP_LABELS = ("KNOWN MISS", "english-table:")
GAPS = "peer gaps (KNOWN MISS, english-table:)"


@dataclass(frozen=True)
class PeerCase:
    """One labelled pair and what claimwatch must answer for it."""

    group: str
    index: int
    label: str
    left: str
    right: str
    expected: dict[str, Any]

    @property
    def scored_in(self) -> str:
        return GAPS if self.label.startswith(GAP_LABELS) else self.group


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    """The peer's label, except for its gaps, which must be conflicts under the named rule."""
    if "collapses" in case:
        return {"duplicate": case["collapses"]}
    label = str(case.get("label", ""))
    if label.startswith(GAP_LABELS):
        rule = "negation" if "negation" in label else "antonym" if "antonym" in label else "value"
        return {"conflict": True, "rule": rule}
    expected = {"conflict": case["conflict"]}
    if "rule" in case:
        expected["rule"] = case["rule"]
    return expected


def _load() -> list[PeerCase]:
    if not PEER.is_file():
        return []
    data = json.loads(PEER.read_text(encoding="utf-8"))
    return [
        PeerCase(group, i, str(c.get("label", "")), c["left"], c["right"], _expected(c))
        for group, cases in data.items()
        for i, c in enumerate(cases)
    ]


CASES = _load()
#: Stands in for the pairs when the file is missing, so the suite fails instead of skipping.
MISSING = PeerCase("missing", 0, "peer suite missing", "", "", {"present": True})


def _present() -> str:
    return "present" if PEER.is_file() else f"missing: {PEER} (the peer suite must be there)"


def _answer(case: PeerCase) -> dict[str, Any]:
    verdict = compare(case.left, case.right)
    return {key: getattr(verdict, key) for key in case.expected}


def test_peer_suite_is_present() -> None:
    """The peer file exists beside the repository and holds its 132 pairs."""
    assert "present" == _present()
    assert 132 == len(CASES)


@pytest.mark.parametrize(
    "case",
    CASES or [MISSING],
    ids=[f"{c.group}-{c.index}-{c.label or 'pair'}" for c in CASES] or ["peer-suite-missing"],
)
def test_peer_pair(case: PeerCase) -> None:
    """Each pair is answered as labelled (the peer's gaps: as conflicts)."""
    assert "present" == _present()
    assert case.expected == _answer(case)


def test_peer_suite_scores(capsys: pytest.CaptureFixture[str]) -> None:
    """Per-group score; no miss outside the gap group, and every peer gap closed."""
    assert "present" == _present()
    total: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    misses = []
    for case in CASES:
        total[case.scored_in] += 1
        if case.expected == _answer(case):
            passed[case.scored_in] += 1
        else:
            misses.append(f"{case.group}[{case.index}] {case.label}")
    lines = [f"  {group:<40} {passed[group]:>3} / {total[group]}" for group in total]
    closed = f"peer gaps closed: {passed[GAPS]} of {total[GAPS]}"
    with capsys.disabled():
        print("\nCiteNexus peer suite, per group:", *lines, f"  {closed}", sep="\n")
    assert [] == [m for m in misses if not m.split("] ", 1)[1].startswith(GAP_LABELS)]
    assert f"peer gaps closed: {total[GAPS]} of {total[GAPS]}" == closed
    assert 7 == total[GAPS]
