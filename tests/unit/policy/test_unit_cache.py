"""pint's parsed definitions cached on disk: made whole, read back, never a failure."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from streams.policy import unit_cache


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
