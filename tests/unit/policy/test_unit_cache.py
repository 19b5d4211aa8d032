"""What pint says, cached on disk (definitions, units, conversions): never a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from claimwatch import units
from claimwatch.policy import unit_cache


def _kg_in_g(registry: Any) -> float:
    return float(registry.Quantity(2.5, "kg").to("g").magnitude)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CLAIMWATCH_CACHE_DIR set to a fresh directory of the test."""
    root = tmp_path / "cache"
    monkeypatch.setenv(unit_cache.CACHE_DIR_ENV, str(root))
    return root


def test_the_first_registry_fills_the_folder_and_the_next_reads_it(cache_dir: Path) -> None:
    """The folder appears whole (pint's files, no building folder left) and is read back."""
    first = unit_cache.cached_registry()
    folder = unit_cache.cache_folder()
    assert folder is not None
    files = sorted(p.name for p in folder.iterdir())
    again = unit_cache.cached_registry()
    assert (True, [folder.name]) == (
        any(name.endswith(".pickle") for name in files),
        [p.name for p in cache_dir.iterdir()],
    )
    assert (2500.0, 2500.0, files) == (
        _kg_in_g(first),
        _kg_in_g(again),
        sorted(p.name for p in folder.iterdir()),
    )


def test_an_empty_setting_means_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """CLAIMWATCH_CACHE_DIR="" builds the registry without writing anything."""
    monkeypatch.setenv(unit_cache.CACHE_DIR_ENV, "")
    monkeypatch.chdir(tmp_path)
    assert (None, 2500.0, []) == (
        unit_cache.cache_folder(),
        _kg_in_g(unit_cache.cached_registry()),
        list(tmp_path.iterdir()),
    )


def test_a_damaged_cache_costs_time_not_the_registry(cache_dir: Path) -> None:
    """A cached file cut short is not trusted: the registry is built without the cache."""
    unit_cache.cached_registry()
    folder = unit_cache.cache_folder()
    assert folder is not None
    for pickled in folder.glob("*.pickle"):
        pickled.write_bytes(pickled.read_bytes()[:100])
    assert 2500.0 == _kg_in_g(unit_cache.cached_registry())


def test_a_cache_that_cannot_be_written_costs_time_not_the_registry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where the cache directory cannot be made (a file stands there), the registry still is."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv(unit_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    assert 2500.0 == _kg_in_g(unit_cache.cached_registry())


def test_a_folder_put_in_place_first_by_another_process_is_kept(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two first starts at once: the folder that landed first stays; the other is dropped."""
    real_rename = os.rename
    landed: list[str] = []

    def other_first(src: str, dst: str | Path) -> None:
        shutil.copytree(src, dst)  # the other process's folder lands just before ours
        (Path(dst) / "theirs").write_text("")
        landed.append(str(dst))
        real_rename(src, dst)  # refused: the folder is there and not empty

    monkeypatch.setattr(unit_cache.os, "rename", other_first)
    registry = unit_cache.cached_registry()
    folder = unit_cache.cache_folder()
    assert folder is not None
    assert ([str(folder)], True, [folder.name], 2500.0) == (
        landed,
        (folder / "theirs").exists(),
        [p.name for p in cache_dir.iterdir()],
        _kg_in_g(registry),
    )


#: A fresh process: loads a policy with a quantity field, decides a claim in grams, and
#: prints the decision's canonical value and whether pint was imported.
_QUANTITY_RUN = """
import sys
from claimwatch.core.resolve import resolve
from claimwatch.core.policy import CompiledPolicy
from claimwatch.policy.loading import parse_policy
from claimwatch.wire.codec import decode_claim
text = 'policy_version: u\\nsources: {s: {authority: system_of_record}}\\n' + (
    'fields: {weight: {type: quantity, unit: kg, freshness: 5m}}\\n'
)
policy = CompiledPolicy(parse_policy(text, 'p.yaml'))
claim = decode_claim(
    b'{"claim_id":"c","subject":"x","field":"weight","source":"s",'
    b'"observed_at":"2026-09-14T09:00:00Z","status":"ok","value":{"value":250,"unit":"g"}}'
)
record = resolve([claim], policy, 1_789_376_400_000_000)
print(record["canonical"], "pint" in sys.modules)
"""

#: The decision's canonical value of 250 g in a field kept in kg.
_KG = "{'value': 0.25, 'unit': 'kg'}"


def _quantity_run(cache_dir: Path) -> str:
    """What `_QUANTITY_RUN` prints in a fresh process with `cache_dir` as the cache."""
    env = {**os.environ, unit_cache.CACHE_DIR_ENV: str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-c", _QUANTITY_RUN], env=env, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def test_a_second_process_checks_and_converts_known_units_without_pint(cache_dir: Path) -> None:
    """The first process asks pint and writes what it said; the next one never imports it."""
    first = _quantity_run(cache_dir)
    known = unit_cache.known_file()
    assert known is not None
    assert ("{'value': 0.25, 'unit': 'kg'} True", "{'value': 0.25, 'unit': 'kg'} False") == (
        first,
        _quantity_run(cache_dir),
    )
    assert {"units": ["kg"], "scales": [["g", "kg", 0.001, 0.0]]} == orjson.loads(
        known.read_bytes()
    )


@pytest.mark.parametrize(
    "damage",
    [b"{not json", b'{"units": [1], "scales": []}', b'{"units": [], "scales": [["g"]]}'],
)
def test_a_damaged_known_units_file_costs_time_not_the_answer(
    cache_dir: Path, damage: bytes
) -> None:
    """A file that does not read as what pint said is ignored: pint answers, and it is fixed."""
    _quantity_run(cache_dir)
    known = unit_cache.known_file()
    assert known is not None
    known.write_bytes(damage)
    assert ("{'value': 0.25, 'unit': 'kg'} True", "{'value': 0.25, 'unit': 'kg'} False") == (
        _quantity_run(cache_dir),
        _quantity_run(cache_dir),
    )


def test_known_units_that_cannot_be_written_cost_time_not_the_answer(
    tmp_path: Path, fresh_unit_memory: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the cache directory cannot be made, units are still checked and converted."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv(unit_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    unit_cache.use_unit_cache()
    units.check_unit("kg")
    assert (0.25, ["kg"]) == (units.converter("g", "kg")(250.0), units.known()[0])
