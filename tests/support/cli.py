"""Running the claimwatch command line as a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: the installed command, beside this interpreter (as `make install` puts it)
CLAIMWATCH = Path(sys.executable).with_name("claimwatch")


def run_cli(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed CLI with `args` (and `env` on top of this process's), output captured."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [str(CLAIMWATCH), *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )
