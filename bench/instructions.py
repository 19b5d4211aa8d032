"""Instructions per claim, counted by valgrind, of the claims runtime (and of the baseline).

Timings on a shared 2-core VM wander by a quarter from run to run, which hides changes of
a few percent. Instructions do not: valgrind's callgrind counts every instruction the
interpreter runs, the same on every run (hash seeds fixed, claim times from a fixed
clock). Each side runs twice under callgrind, over `SMALL` and `LARGE` claims of the
pipeline workload; the difference over the difference in claims is its cost per claim,
start-up and set-up cancelled out.

It compares versions of the same code (run it before and after a change). It does not
compare the runtime with the streaming baseline (`bench.plain_stream`), whose count is
given for reference only: the two ran the same number of instructions a claim here
(693,038 and 691,606) while the runtime took 1.65 times as long (155 vs 94 µs at 2,500
claims), the baseline's share being native JSON code that runs more instructions per
cycle than the interpreter's. Time ratios (`core`) are the speed figures.

Not in the default `make bench` (valgrind is a Debian package, not a dependency: `apt
install valgrind`), and about four minutes on two cores: `CLAIMWATCH_BENCH=instructions
make bench`, or `python -m bench.instructions`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from bench import plain_stream
from bench.pipeline_bench import fresh_claims

#: Claims of the two runs per side (five per fact).
SMALL: Final = 500
LARGE: Final = 2_500
#: The claims' clock: 20 µs apart from a fixed instant, as a backlog is published.
START_US: Final = 1_790_000_000_000_000
STEP_US: Final = 20
_COLLECTED = re.compile(r"Collected : (\d+)")


def records(claims: int) -> list[tuple[bytes, bytes, int]]:
    """The pipeline workload's first `claims` claims (key, value, partition), on a fixed clock."""
    clock = itertools.count(START_US, STEP_US)
    source = fresh_claims(max(1, claims // 5), "i", clock=lambda: next(clock))
    return [next(source) for _ in range(claims)]


def run(side: str, claims: int) -> None:
    """Decide `claims` claims with one side (what callgrind counts)."""
    items = records(claims)
    if side == "runtime":
        plain_stream.runtime_us(items, 4, now_us=START_US + claims * STEP_US + 1_000_000)
    else:
        plain_stream.step_us(items, 4)


def _counted(side: str, claims: int) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RuntimeError("valgrind is not installed (apt install valgrind)")
    command = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-m", "bench.instructions", "run", side, str(claims)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def measure() -> dict[str, object]:
    """Instructions per claim of each side (see the module's note on comparing them)."""
    per_claim: dict[str, int] = {}
    with ThreadPoolExecutor(2) as pool:
        for side in ("runtime", "plain"):
            small, large = pool.map(_counted, (side, side), (SMALL, LARGE))
            per_claim[side] = (large - small) // (LARGE - SMALL)
    return {
        "claims": [SMALL, LARGE],
        "runtime_instructions_per_claim": per_claim["runtime"],
        "plain_instructions_per_claim": per_claim["plain"],
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps(measure()))
