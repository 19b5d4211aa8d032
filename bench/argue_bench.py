"""Argumentation speed: grounded at 10^4..10^6 arguments, preferred vs python-argumentation."""

from __future__ import annotations

import gc
import itertools
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from claimwatch.core.argue import Framework, extensions, grounded_labels

GROUNDED_SIZES = (10_000, 100_000, 1_000_000)
#: Extra grounded size where the reference's fixpoint still finishes, to give a ratio.
GROUNDED_REFERENCE_SIZES = (1_000,)
PREFERRED_SIZES = (10, 14, 18, 22, 26, 30, 50, 100, 200, 300)
SEEDS = (1, 2, 3)
GROUNDED_DEGREE = 2.0
PREFERRED_DEGREE = 1.5
LOCAL_WINDOW = 64


def generate(
    n: int, degree: float, seed: int, *, all_attacked: bool, window: int | None = None
) -> list[tuple[int, int]]:
    """Random attacks, `degree` per argument on average; optionally every argument attacked.

    `window`: each attack reaches at most that many indices away (a framework with locality);
    None: anywhere. With every argument attacked the grounded extension is (nearly) empty, so
    the preferred search has the whole framework to label.
    """
    rng = random.Random(seed * 1_000_003 + n)
    pairs: set[tuple[int, int]] = set()
    for _ in range(int(n * degree)):
        a = rng.randrange(n)
        b = rng.randrange(n) if window is None else (a + rng.randint(-window, window)) % n
        pairs.add((a, b))
    if all_attacked:
        pairs.update((rng.randrange(n), b) for b in range(n))
    return sorted(pairs)


def build(
    n: int, degree: float, seed: int, *, all_attacked: bool, window: int | None = None
) -> Framework:
    """The framework of `generate` with arguments named 1..n."""
    attacks = generate(n, degree, seed, all_attacked=all_attacked, window=window)
    return Framework.from_indices([str(i) for i in range(1, n + 1)], attacks)


def _grounded_row(n: int, window: int | None, budget_s: float, reference: bool) -> dict[str, Any]:
    framework = build(n, GROUNDED_DEGREE, SEEDS[0], all_attacked=False, window=window)
    elements = n + framework.attack_count()
    seconds = _best_of(3, lambda: grounded_labels(framework))
    labels = grounded_labels(framework)
    ours = sorted(i for i, label in enumerate(labels) if label == 1)
    row: dict[str, Any] = {
        "arguments": n,
        "attacks": framework.attack_count(),
        "grounded_size": len(ours),
        "seconds": round(seconds, 4),
        "ns_per_argument_or_attack": round(seconds * 1e9 / elements, 1),
    }
    if window is not None:
        return row
    if reference:
        row.update(
            _versus("grounded", n, GROUNDED_DEGREE, SEEDS[0], False, seconds, [ours], budget_s)
        )
    else:
        row["reference"] = "not run (ran out of budget at a smaller size)"
    return row


def _best_of(times: int, work: Callable[[], object]) -> float:
    """The fastest of a few runs, with the garbage collector off while timing."""
    best = float("inf")
    for _ in range(times):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
    return best


def _preferred_row(n: int, budget_s: float, reference: bool) -> dict[str, Any]:
    seconds = 0.0
    reference_seconds = 0.0
    count = 0
    finished, agree = reference, True
    for seed in SEEDS:
        framework = build(n, PREFERRED_DEGREE, seed, all_attacked=True)
        started = time.perf_counter()
        found = extensions(framework, "preferred")
        elapsed = time.perf_counter() - started
        seconds += elapsed
        count += len(found)
        if finished:
            other = _versus("preferred", n, PREFERRED_DEGREE, seed, True, elapsed, found, budget_s)
            if "reference_seconds" not in other:
                finished = False
            else:
                reference_seconds += other["reference_seconds"]
                agree = agree and other["same_extensions"]
    row: dict[str, Any] = {
        "arguments": n,
        "frameworks": len(SEEDS),
        "preferred_extensions": count,
        "seconds": round(seconds, 4),
    }
    if finished:
        row["reference_seconds"] = round(reference_seconds, 4)
        row["speedup_vs_reference"] = round(reference_seconds / max(seconds, 1e-9), 1)
        row["same_extensions"] = agree
    elif reference:
        row["reference"] = f"did not finish within {budget_s:g} s per framework"
    else:
        row["reference"] = "not run (ran out of budget at a smaller size)"
    return row


def _versus(
    semantics: str,
    n: int,
    degree: float,
    seed: int,
    all_attacked: bool,
    ours_s: float,
    ours: list[tuple[int, ...]] | list[list[int]],
    budget_s: float,
) -> dict[str, Any]:
    """Run the reference on the same framework in a child process, within the budget."""
    args = [semantics, str(n), str(degree), str(seed), str(int(all_attacked))]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.argue_bench", "reference", *args],
            capture_output=True,
            text=True,
            timeout=budget_s,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"reference": f"did not finish within {budget_s:g} s"}
    result = json.loads(done.stdout)
    same = sorted(map(list, ours)) == result["extensions"]
    return {
        "reference_seconds": round(result["seconds"], 4),
        "speedup_vs_reference": round(result["seconds"] / max(ours_s, 1e-9), 1),
        "same_extensions": same,
    }


def _reference_child(semantics: str, n: int, degree: float, seed: int, all_attacked: bool) -> None:
    from py_arg.abstract_argumentation_classes.abstract_argumentation_framework import (
        AbstractArgumentationFramework,
    )
    from py_arg.abstract_argumentation_classes.argument import Argument
    from py_arg.abstract_argumentation_classes.defeat import Defeat
    from py_arg.algorithms.semantics.get_grounded_extension import get_grounded_extension
    from py_arg.algorithms.semantics.get_preferred_extensions import get_preferred_extensions

    attacks = generate(n, degree, seed, all_attacked=all_attacked)
    arguments = [Argument(str(i)) for i in range(n)]
    framework = AbstractArgumentationFramework(
        "bench", arguments, [Defeat(arguments[a], arguments[b]) for a, b in attacks]
    )
    started = time.perf_counter()
    if semantics == "grounded":
        found = [get_grounded_extension(framework)]
    else:
        found = list(get_preferred_extensions(framework))
    seconds = time.perf_counter() - started
    named = sorted(sorted(int(arg.name) for arg in ext) for ext in found)
    print(json.dumps({"seconds": seconds, "extensions": named}))


def _growth(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Time ratio of each size to the previous one, next to the size ratio (10: linear)."""
    return {
        f"{big['arguments']}/{small['arguments']}": {
            "size_ratio": round(big["arguments"] / small["arguments"], 1),
            "time_ratio": round(big["seconds"] / max(small["seconds"], 1e-9), 1),
        }
        for small, big in itertools.pairwise(rows)
    }


def run(
    grounded_sizes: tuple[int, ...] = GROUNDED_SIZES,
    preferred_sizes: tuple[int, ...] = PREFERRED_SIZES,
    budget_s: float = 30.0,
) -> dict[str, Any]:
    """Every figure: grounded rows with growth ratios, preferred rows vs the reference.

    The reference (python-argumentation, a test-only dependency) runs in a child process with
    a time budget per framework, on the same generated frameworks (same generator, size and
    seed); from the first size where it runs out of budget on, it is reported as such.

    Grounded runs on two families of the same size and degree: attacks anywhere (random
    memory access: the cost per element rises once the framework outgrows the CPU caches)
    and attacks within LOCAL_WINDOW indices (the algorithm's own, linear, growth).
    """
    anywhere: list[dict[str, Any]] = []
    reference = True
    for n in (*GROUNDED_REFERENCE_SIZES, *grounded_sizes):
        anywhere.append(_grounded_row(n, None, budget_s, reference))
        reference = reference and "reference_seconds" in anywhere[-1]
    measured = [row for row in anywhere if row["arguments"] in grounded_sizes]
    local = [_grounded_row(n, LOCAL_WINDOW, budget_s, False) for n in grounded_sizes]
    preferred = []
    reference = True
    for n in preferred_sizes:
        row = _preferred_row(n, budget_s, reference)
        reference = reference and "reference_seconds" in row
        preferred.append(row)
    return {
        "grounded": {
            "degree": GROUNDED_DEGREE,
            "random": {"rows": anywhere, "growth": _growth(measured)},
            f"local_window_{LOCAL_WINDOW}": {"rows": local, "growth": _growth(local)},
        },
        "preferred": {"degree": PREFERRED_DEGREE, "all_attacked": True, "rows": preferred},
    }


def main(argv: list[str]) -> int:
    """`python -m bench.argue_bench` prints the figures; `reference ...` is the child side."""
    if argv and argv[0] == "reference":
        semantics, n, degree, seed, all_attacked = argv[1:6]
        _reference_child(semantics, int(n), float(degree), int(seed), all_attacked == "1")
        return 0
    print(json.dumps(run(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
