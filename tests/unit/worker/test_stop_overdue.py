"""A stop that does not finish in time ends the worker with exit 4 and says why."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from claimwatch.worker.run import EXIT_STOP_OVERDUE, ClaimwatchWorker, stop_overdue
from claimwatch.worker.settings import WorkerSettings


def test_an_overdue_stop_logs_the_reason_and_exits_4(caplog: pytest.LogCaptureFixture) -> None:
    """The log names the timeout and its setting; the exit code is 4."""
    codes: list[int] = []
    with caplog.at_level(logging.ERROR):
        stop_overdue(5.0, codes.append)
    assert [EXIT_STOP_OVERDUE] == codes
    assert 4 == EXIT_STOP_OVERDUE
    assert "did not stop within 5s" in caplog.text
    assert "CLAIMWATCH_STOP_TIMEOUT_S" in caplog.text


@pytest.mark.parametrize(("env", "expected"), [(None, 30.0), ("5", 5.0), ("0", 0.0)])
def test_the_stop_timeout_is_30_seconds_unless_set(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: float
) -> None:
    """CLAIMWATCH_STOP_TIMEOUT_S sets it (0: no deadline); the worker class agrees on 30."""
    if env is None:
        monkeypatch.delenv("CLAIMWATCH_STOP_TIMEOUT_S", raising=False)
    else:
        monkeypatch.setenv("CLAIMWATCH_STOP_TIMEOUT_S", env)
    assert expected == WorkerSettings(Path("policy.yaml")).stop_timeout_s
    assert 30.0 == ClaimwatchWorker.stop_timeout_s
