"""Where the worker's web server binds and the address it gives other workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.worker.app import build_app
from claimwatch.worker.settings import WorkerSettings

POLICY = Path(__file__).resolve().parents[3] / "examples" / "policy.yaml"


@pytest.mark.parametrize(
    ("env", "given", "expected"),
    [
        ({}, {}, ("127.0.0.1", "http://127.0.0.1:6066")),
        ({"CLAIMWATCH_WEB_HOST": "worker"}, {}, ("worker", "http://worker:6066")),
        (
            {"CLAIMWATCH_WEB_HOST": "worker", "CLAIMWATCH_WEB_BIND": "0.0.0.0"},
            {},
            ("0.0.0.0", "http://worker:6066"),
        ),
        (
            {"CLAIMWATCH_WEB_HOST": "a"},
            {"web_host": "b", "web_bind": "::"},
            ("::", "http://b:6066"),
        ),
    ],
)
def test_the_bind_address_defaults_to_the_host_other_workers_reach(
    env: dict[str, str],
    given: dict[str, str],
    expected: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The web server binds the web host unless told otherwise; flags beat the environment."""
    monkeypatch.delenv("CLAIMWATCH_WEB_HOST", raising=False)
    monkeypatch.delenv("CLAIMWATCH_WEB_BIND", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = WorkerSettings(policy_path=POLICY, data_dir=tmp_path)
    for name, value in given.items():
        setattr(settings, name, value)
    app = build_app(settings).app
    assert expected == (app.conf.web_bind, str(app.conf.canonical_url).rstrip("/"))
