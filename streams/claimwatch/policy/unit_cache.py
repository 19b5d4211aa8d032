"""pint's parsed unit definitions cached on disk, so a process reads its registry back.

Building pint's default registry parses its definitions file, at every start of a
command whose policy has a quantity field. pint can keep what it parsed in a cache
folder and read it back, but it writes that folder file by file, in place: a process
starting meanwhile could read a half-written file. So the cache lives in a folder of its
own per pint and Python version (pint's definitions and pickles differ between them),
made whole elsewhere and then renamed into place: a process sees no folder, or a complete
one. Anything that goes wrong with the cache (no home, a read-only disk, a damaged file)
costs the time, never the registry: it is then built without one.

`CLAIMWATCH_CACHE_DIR` names where the folder goes (default: the user's cache directory,
`~/.cache/claimwatch` on Linux); set to an empty string, there is no cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import logging
import math
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson

from claimwatch import units

# pint (slow to import) and platformdirs are imported where a registry is built: a policy
# without a quantity field never builds one, and its commands start without them.

log = logging.getLogger(__name__)

#: Where the cache goes (default: the user's cache directory); empty: no cache.
CACHE_DIR_ENV = "CLAIMWATCH_CACHE_DIR"


def _cache_root() -> Path | None:
    """Where the cache goes: `CLAIMWATCH_CACHE_DIR`, else the user cache dir (None: no cache)."""
    root = os.environ.get(CACHE_DIR_ENV)
    if root == "":
        return None
    if root is not None:
        return Path(root)
    import platformdirs

    return platformdirs.user_cache_path("claimwatch")


def cache_folder() -> Path | None:
    """The folder of this pint and Python's cached definitions (None: no cache)."""
    import pint

    base = _cache_root()
    if base is None:
        return None
    version = f"{platform.python_implementation()}-{platform.python_version()}"
    return base / f"pint-{pint.__version__}-{version}"


def cached_registry() -> Any:
    """Pint's default registry, its definitions read from the cache (made on first use)."""
    import pint

    folder = cache_folder()
    if folder is None:
        return pint.UnitRegistry()
    try:
        if folder.is_dir():
            return pint.UnitRegistry(cache_folder=folder)
        return _first(folder)
    except Exception as exc:  # the cache is only ever a saving: never a failure
        log.debug("unit cache %s not used: %s", folder, exc)
        return pint.UnitRegistry()


def _first(folder: Path) -> Any:
    """Fill a private cache folder, move it into place whole, then read the registry from it.

    The registry is read from the folder in place rather than kept from the private one,
    which is gone by then.
    """
    import pint

    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    building = tempfile.mkdtemp(prefix=".building-", dir=folder.parent)
    try:
        pint.UnitRegistry(cache_folder=building)
        with contextlib.suppress(OSError):  # another process put its own there first
            os.rename(building, folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not folder.is_dir():
        return pint.UnitRegistry()
    return pint.UnitRegistry(cache_folder=folder)


def known_file() -> Path | None:
    """The file of what pint said before, for this very pint install (None: no cache).

    Named by a digest of the install's RECORD (every file of it, with its hash), found
    without importing pint: another pint, or the same one changed, has another file.
    """
    base, digest = _cache_root(), _pint_digest()
    return None if base is None or digest is None else base / f"units-{digest}.json"


@functools.cache
def _pint_digest() -> str | None:
    """A digest of the pint install's RECORD (read once a process), or None if not found."""
    spec = importlib.util.find_spec("pint")
    if spec is None or spec.origin is None:
        return None
    records = sorted(Path(spec.origin).parent.parent.glob("pint-*.dist-info/RECORD"))
    if len(records) != 1:
        return None
    return hashlib.sha256(records[0].read_bytes()).hexdigest()[:16]


def load_known(path: Path) -> tuple[list[str], dict[tuple[str, str], tuple[float, float]]]:
    """What the file says pint said (units, scales); nothing when the file is in doubt."""
    try:
        data = orjson.loads(path.read_bytes())
        names = data["units"]
        scales = {(a, b): (float(scale), float(offset)) for a, b, scale, offset in data["scales"]}
        if not all(isinstance(n, str) for n in names) or not all(
            isinstance(a, str) and isinstance(b, str) for a, b in scales
        ):
            raise ValueError("a unit is not a string")
        if not all(math.isfinite(x) for pair in scales.values() for x in pair):
            raise ValueError("a scale is not finite")
    except FileNotFoundError:
        return [], {}
    except Exception as exc:  # damaged, or written by hand: pint answers instead
        log.debug("known units %s not used: %s", path, exc)
        return [], {}
    return names, scales


def save_known(path: Path) -> None:
    """Write what is known now to the file, whole (written aside, then renamed into place)."""
    names, scales = units.known()
    body = {"units": names, "scales": [[a, b, s, o] for (a, b), (s, o) in scales.items()]}
    aside = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, aside = tempfile.mkstemp(prefix=".units-", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(orjson.dumps(body))
        os.replace(aside, path)
    except OSError as exc:  # the cache is only ever a saving
        log.debug("known units not written to %s: %s", path, exc)
        if aside is not None:
            with contextlib.suppress(OSError):
                os.unlink(aside)


def use_unit_cache() -> None:
    """Have the process's unit registry built from the cache (see `units.registry`).

    What pint said in earlier processes (units it parses, conversions) is read first: a
    policy and claims that use only such units need no pint at all. What it says anew is
    written back as soon as it is said (forked processes included).
    """
    units.build_registry_with(cached_registry)
    path = known_file()
    if path is not None:
        names, scales = load_known(path)
        units.know(names, scales, lambda: save_known(path))
