"""Which event loop the worker runs on: uvloop by default, asyncio when asked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from claimwatch.worker.loop import DEFAULT_LOOP, install_loop, running_loop
from claimwatch.worker.settings import WorkerSettings


@pytest.fixture(autouse=True)
def default_policy_after() -> Iterator[None]:
    """Each test leaves the process on Python's own loop policy."""
    yield
    asyncio.set_event_loop_policy(None)


async def _name() -> str:
    return running_loop()


@pytest.mark.parametrize("name", ["uvloop", "asyncio"])
def test_the_installed_loop_is_the_one_that_runs(name: str) -> None:
    """After install_loop(name), a new loop is that loop, and the name comes back."""
    installed = install_loop(name)
    assert (name, name) == (installed, asyncio.run(_name()))


def test_asyncio_undoes_uvloop() -> None:
    """Asking for asyncio after uvloop puts Python's own loop back."""
    install_loop("uvloop")
    install_loop("asyncio")
    assert "asyncio" == asyncio.run(_name())


def test_an_unknown_loop_is_refused() -> None:
    """A loop name that is not one of LOOPS raises, naming the choices."""
    with pytest.raises(ValueError, match="uvloop, asyncio"):
        install_loop("trio")


def test_the_worker_defaults_to_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --loop or CLAIMWATCH_LOOP the settings name uvloop; the variable overrides it."""
    monkeypatch.delenv("CLAIMWATCH_LOOP", raising=False)
    default = WorkerSettings(policy_path=__file__).loop  # type: ignore[arg-type]
    monkeypatch.setenv("CLAIMWATCH_LOOP", "asyncio")
    chosen = WorkerSettings(policy_path=__file__).loop  # type: ignore[arg-type]
    assert ("uvloop", "uvloop", "asyncio") == (DEFAULT_LOOP, default, chosen)
