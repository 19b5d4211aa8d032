"""Is compiling `streams/claimwatch/core` with mypyc worth an optional build? The ratio, measured.

A copy of `streams/` (the claimwatch package) is made under `.cache/mypyc/<digest of the sources>/`
and its core modules are compiled there with the mypyc that ships with mypy (the copy is
kept, so a second `make bench` reuses it). The installed tree is never touched: the pure
Python core stays what claimwatch runs and what the tests test. Both trees then run the
same work in fresh interpreters, taken in turns: `claimwatch resolve --jobs 1` over the
core workload file (whole process, its output compared byte for byte), and the worker's
claims runtime (`Runtime.handle`, no Kafka) over the pipeline workload at settle 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from bench.workload import NOW, POLICY

ROOT: Final = Path(__file__).resolve().parents[1]
#: Core modules mypyc 2.x cannot compile (it stops with an internal error): argue's
#: `enumerate` over a bytearray, and docstore's loop over a value typed Any.
NOT_COMPILED: Final = ("streams/claimwatch/core/argue/", "streams/claimwatch/core/docstore.py")
MYPY_INI: Final = """[mypy]
strict = True
python_version = 3.11
mypy_path = streams
plugins = pydantic.mypy
[mypy-pint.*,babel.*]
ignore_missing_imports = True
"""
RUNS: Final = 3


def _sources() -> list[Path]:
    return sorted((ROOT / "streams").rglob("*.py"))


def _compiled_modules(tree: Path) -> list[str]:
    return [
        str(p.relative_to(tree))
        for p in sorted((tree / "streams" / "claimwatch" / "core").rglob("*.py"))
        if not any(str(p.relative_to(tree)).startswith(skip) for skip in NOT_COMPILED)
    ]


def build() -> tuple[Path, float]:
    """The compiled copy of the tree (built if absent), and the seconds its build took."""
    digest = hashlib.blake2b(digest_size=8)
    for path in _sources():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    tree = ROOT / ".cache" / "mypyc" / digest.hexdigest()
    if (tree / ".built").exists():
        return tree, 0.0
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(
        ROOT / "streams", tree / "streams", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tree / "mypy.ini").write_text(MYPY_INI)
    mypyc = Path(sys.executable).with_name("mypyc")
    started = time.perf_counter()
    result = subprocess.run(
        [str(mypyc), *_compiled_modules(tree)], cwd=tree, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"mypyc failed:\n{(result.stdout + result.stderr)[-3000:]}")
    seconds = time.perf_counter() - started
    (tree / ".built").touch()
    return tree, round(seconds, 1)


def _python(tree: Path, code: str, *args: str) -> tuple[float, bytes]:
    """Run `code` with `tree` first on the path (no current directory); seconds and stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree / "streams"), str(ROOT)])}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-P", "-c", code, *args], env=env, capture_output=True, check=True
    )
    return time.perf_counter() - started, result.stdout


_RESOLVE: Final = """
import sys, claimwatch.core.resolve as r
assert r.__file__.endswith(sys.argv[1]), r.__file__
from claimwatch.cli.main import main
sys.argv = ["claimwatch", "resolve", "--jobs", "1", *sys.argv[2:]]
main()
"""

_RUNTIME: Final = """
import sys, time
import claimwatch.core.processor as p
assert p.__file__.endswith(sys.argv[1]), p.__file__
from pathlib import Path
from bench.pipeline_bench import fresh_claims, settle_zero_policy
from claimwatch.policy.loading import load_policy
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.claims.edge import Runtime
policy = load_policy(settle_zero_policy(Path(sys.argv[2])))
source = fresh_claims(10_000, "c")
records = [next(source) for _ in range(50_000)]
runtime = Runtime(policy, TopicNames("bench."), 4, {})
now = time.time_ns() // 1000
started = time.perf_counter()
for offset, (key, value, partition) in enumerate(records):
    runtime.handle(partition, offset, key, value, now)
print((time.perf_counter() - started) * 1e6 / len(records))
"""


def run(claims_file: Path) -> dict[str, Any]:
    """Compiled vs pure core: resolve whole process, and the runtime's µs per claim."""
    tree, build_s = build()
    policy_copy = ROOT / ".cache" / "mypyc" / "settle0.yaml"
    resolve_args = ["--policy", str(POLICY), "--now", NOW, str(claims_file)]
    times: dict[str, list[float]] = {"pure": [], "compiled": []}
    runtime_us: dict[str, list[float]] = {"pure": [], "compiled": []}
    outputs: dict[str, bytes] = {}
    for _ in range(RUNS):
        for side, path, suffix in (("pure", ROOT, ".py"), ("compiled", tree, ".so")):
            seconds, out = _python(path, _RESOLVE, suffix, *resolve_args)
            times[side].append(round(seconds, 3))
            if outputs.setdefault(side, out) != out:
                raise RuntimeError(f"{side} resolve output changed between runs")
            _, per_claim = _python(path, _RUNTIME, suffix, str(policy_copy))
            runtime_us[side].append(round(float(per_claim), 1))
    if outputs["pure"] != outputs["compiled"]:
        raise RuntimeError("the compiled core resolved the file to other bytes")
    median = {side: sorted(v)[RUNS // 2] for side, v in times.items()}
    per_claim = {side: sorted(v)[RUNS // 2] for side, v in runtime_us.items()}
    return {
        "modules_compiled": len(_compiled_modules(tree)),
        "not_compiled": list(NOT_COMPILED),
        "build_s": build_s,
        "resolve_s": times,
        "resolve_ratio": round(median["pure"] / median["compiled"], 2),
        "runtime_us_per_claim": runtime_us,
        "runtime_ratio": round(per_claim["pure"] / per_claim["compiled"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]))))
