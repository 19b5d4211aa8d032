"""A real OPA server for the tests, serving the policy packs of examples/governance/packs.

OPA is built from its Go module by `make tools` into `.cache/go/bin/opa`; without it a test
fails with that message, it never skips. The `opa_url` fixture is registered for every test
by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway import free_port, running
from tests.support.paths import REPO

#: where `make tools` builds OPA, and the packs the example policy expects
OPA = REPO / ".cache" / "go" / "bin" / "opa"
PACKS = REPO / "examples" / "governance" / "packs"
#: the longest OPA may take to load its packs and answer /health
READY_S = 30.0


def require_opa() -> Path:
    """The OPA binary; an AssertionError naming `make tools` when it is missing."""
    assert OPA.exists(), f"run `make tools`: {OPA.relative_to(REPO)} is missing"
    return OPA


def opa_command(port: int, packs: Path) -> list[str]:
    """`opa run --server` on loopback `port` with the Rego files of `packs` (not their tests)."""
    return [
        str(require_opa()),
        "run",
        "--server",
        "--addr",
        f"127.0.0.1:{port}",
        "--skip-version-check",
        "--log-level",
        "error",
        "--ignore",
        "*_test.rego",
        str(packs),
    ]


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = READY_S) -> None:
    """Return once `GET url/health` gives 200; fail when `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"opa run exited with {proc.returncode} before it was healthy")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1.0) as got:
                if got.status == 200:
                    return
                last = f"status {got.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.1)
    raise AssertionError(f"OPA at {url} not healthy after {timeout} s: {last}")


@contextlib.contextmanager
def opa_server(packs: Path = PACKS) -> Iterator[str]:
    """A real `opa run --server` with the packs of `packs`; yields its URL, stops it at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running(opa_command(port, packs), port) as proc:
        wait_healthy(url, proc)
        yield url


@pytest.fixture(scope="session")
def opa_url() -> Iterator[str]:
    """The URL of one OPA server for the session, serving examples/governance/packs."""
    with opa_server() as url:
        yield url
