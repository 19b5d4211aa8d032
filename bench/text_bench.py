"""Passage comparator speed: the CiteNexus peer suite repeated to at least 100,000 pairs.

`python -m bench.text_bench [PAIRS]` prints one JSON line of figures; `run()` returns them.
Figures: `pairs_per_s` compares raw strings (both passages tokenized for every pair, the
per-word memo warm as in a live stream); `pairs_per_s_cold` empties that memo before every
pair; `analyzed_pairs_per_s` compares passages analyzed once, as resolution does (each
passage of a fact is analyzed once, then compared pairwise).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from claimwatch.core.text import analyze, compare, compare_passages
from claimwatch.core.text.tables import lexicon

PEER = Path(__file__).resolve().parents[1].parent / "shared/peers/citenexus/conflict.json"


def peer_pairs(path: Path = PEER) -> list[tuple[str, str]]:
    """Every (left, right) pair of the peer suite, in file order; a missing file is an error."""
    if not path.is_file():
        raise SystemExit(f"text bench: the peer suite is missing: {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(case["left"], case["right"]) for cases in data.values() for case in cases]


def _rate(count: int, seconds: float) -> int:
    return round(count / seconds) if seconds > 0 else 0


def run(min_pairs: int = 100_000, path: Path = PEER) -> dict[str, object]:
    """Time the comparator over the peer suite repeated to at least `min_pairs` pairs."""
    pairs = peer_pairs(path)
    rounds = -(-min_pairs // len(pairs))
    workload = pairs * rounds
    expected = [compare(left, right) for left, right in pairs]  # warms the tables

    started = time.perf_counter()
    verdicts = [compare(left, right) for left, right in workload]
    raw_s = time.perf_counter() - started
    if verdicts != expected * rounds:
        raise SystemExit("text bench: verdicts changed between repetitions")

    cold = pairs * max(1, 10_000 // len(pairs))
    memo = lexicon().memo
    started = time.perf_counter()
    for left, right in cold:
        memo.clear()
        compare(left, right)
    cold_s = time.perf_counter() - started

    analyzed = [(analyze(left), analyze(right)) for left, right in pairs] * rounds
    started = time.perf_counter()
    for a, b in analyzed:
        compare_passages(a, b)
    analyzed_s = time.perf_counter() - started

    return {
        "suite_pairs": len(pairs),
        "pairs": len(workload),
        "conflicts": sum(v.conflict for v in verdicts),
        "seconds": round(raw_s, 3),
        "pairs_per_s": _rate(len(workload), raw_s),
        "pairs_per_s_cold": _rate(len(cold), cold_s),
        "analyzed_pairs_per_s": _rate(len(analyzed), analyzed_s),
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)))
