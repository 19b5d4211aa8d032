"""`make run`'s demo starts its worker where the clients look: their prefix, their port."""

from __future__ import annotations

import pytest
from claimwatch.sim import demo


@pytest.mark.parametrize(
    ("env", "prefix", "port"),
    [
        ({}, "claimwatch.", 6066),
        ({"CLAIMWATCH_TOPIC_PREFIX": "team-a."}, "team-a.", 6066),
        ({"CLAIMWATCH_WORKER_URL": "http://127.0.0.1:7001"}, "claimwatch.", 7001),
        ({"CLAIMWATCH_WORKER_URL": "http://127.0.0.1"}, "claimwatch.", 6066),
    ],
)
def test_defaults_follow_the_clients_variables(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], prefix: str, port: int
) -> None:
    for name in ("CLAIMWATCH_TOPIC_PREFIX", "CLAIMWATCH_WORKER_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = demo._arguments([])
    assert (prefix, port) == (args.topic_prefix, args.web_port)


def test_options_win_over_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAIMWATCH_TOPIC_PREFIX", "team-a.")
    args = demo._arguments(["--topic-prefix", "demo.", "--web-port", "7002"])
    assert ("demo.", 7002) == (args.topic_prefix, args.web_port)
