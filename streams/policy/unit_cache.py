"""pint's parsed unit definitions cached on disk, so a process builds its registry in 0.04 s.

Building pint's default registry parses its definitions file: about 0.3 s at every start
of a command whose policy has a quantity field. pint can keep what it parsed in a cache
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
import logging
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

from streams.core import units

# pint (0.2 s to import) and platformdirs are imported where a registry is built: a policy
# without a quantity field never builds one, and its commands start without them.

log = logging.getLogger(__name__)

#: Where the cache goes (default: the user's cache directory); empty: no cache.
CACHE_DIR_ENV = "CLAIMWATCH_CACHE_DIR"


def cache_folder() -> Path | None:
    """The folder of this pint and Python's cached definitions (None: no cache)."""
    import pint
    import platformdirs

    root = os.environ.get(CACHE_DIR_ENV)
    if root == "":
        return None
    base = Path(root) if root is not None else platformdirs.user_cache_path("claimwatch")
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

    The registry is read from the folder in place (0.04 s more) rather than kept from the
    private one, which is gone by then.
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


def use_unit_cache() -> None:
    """Have the process's unit registry built from the cache (see `units.registry`)."""
    units.build_registry_with(cached_registry)
