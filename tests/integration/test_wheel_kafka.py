"""The built wheel in a fresh virtual environment: `import claimwatch`, its worker, the example.

What a user gets from `pip install claimwatch`, not the checkout: the wheel is built from
the repository, installed with its dependencies (at the versions of constraints.txt) into
a new virtual environment, and every run here starts outside the repository with no
PYTHONPATH, so only the installed package can be imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kafka import REPO, Workers

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

DEMO_POLICY = REPO / "examples" / "demo-policy.yaml"
#: The quickstart's agent script, which the README and the docs show verbatim.
AGENT = REPO / "examples" / "agent.py"
INSTALL_TIMEOUT_S = 600


def _run(args: list[str | Path], cwd: Path, timeout: float, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert 0 == done.returncode, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a new virtual environment holding the wheel built from the repo."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, REPO]
    _run(pip_wheel, root, INSTALL_TIMEOUT_S)
    (wheel,) = dist.glob("claimwatch-*.whl")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", venv], root, INSTALL_TIMEOUT_S)
    install = [venv / "bin" / "pip", "install", "-q", "-c", REPO / "constraints.txt", wheel]
    _run(install, root, INSTALL_TIMEOUT_S)
    return venv / "bin"


PROBE = """
import importlib.util, pathlib, claimwatch
home = pathlib.Path(claimwatch.__file__).parent
print(home.is_relative_to(pathlib.Path({site!r})))
print(all(hasattr(claimwatch, name) for name in claimwatch.__all__))
print((home / "py.typed").is_file())
print([m for m in ("streams", "schemas") if importlib.util.find_spec(m) is not None])
"""


def test_the_wheel_installs_claimwatch_with_its_public_api(installed: Path, tmp_path: Path) -> None:
    """The package comes from the environment, typed, with every public name; no stray tops."""
    site = installed.parent / "lib"
    out = _run([installed / "python", "-c", PROBE.format(site=str(site))], tmp_path, 60)
    assert ["True", "True", "True", "[]"] == out.split()
    assert "claimwatch" in _run([installed / "claimwatch", "--help"], tmp_path, 60)


async def test_the_readme_example_runs_against_the_installed_worker(
    installed: Path, workers: Workers, tmp_path: Path
) -> None:
    """The installed `claimwatch worker` and the example agent, on the real broker."""
    worker = await workers.launch(DEMO_POLICY, launcher=(str(installed / "claimwatch"),))
    out = _run(
        [installed / "python", AGENT],
        tmp_path,
        120,
        CLAIMWATCH_BOOTSTRAP=worker.bootstrap,
        CLAIMWATCH_TOPIC_PREFIX=worker.prefix,
        CLAIMWATCH_WORKER_URL=worker.url,
    )
    assert "resolved paid proceed" == out.splitlines()[0], out
