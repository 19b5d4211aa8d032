"""Only reads are open: the agent stop route takes the admin token, Faust's own pages are off."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.worker.app import build_app
from claimwatch.worker.pages import MIN_ADMIN_TOKEN_CHARS, admin_refusal
from claimwatch.worker.settings import WorkerSettings

from tests.support.paths import EXAMPLE_POLICY

TOKEN = "s3cret-admin-token-0123456789"


@pytest.mark.parametrize(
    ("token", "authorization", "expected"),
    [
        (TOKEN, f"Bearer {TOKEN}", None),
        (TOKEN, f"bearer   {TOKEN} ", None),
        (TOKEN, None, 401),
        (TOKEN, "", 401),
        (TOKEN, f"Basic {TOKEN}", 401),
        (TOKEN, f"Bearer {TOKEN[:-1]}", 401),
        (TOKEN, f"Bearer {TOKEN}x", 401),
        (TOKEN, "Bearer", 401),
        (None, f"Bearer {TOKEN}", 403),
        (None, None, 403),
        ("short", "Bearer short", 403),
    ],
)
def test_the_stop_route_takes_the_configured_bearer_token_only(
    token: str | None, authorization: str | None, expected: int | None
) -> None:
    """401 without the right token, 403 while no usable token is configured, else allowed."""
    refusal = admin_refusal(token, authorization)
    assert expected == (refusal[0] if refusal is not None else None)


@pytest.mark.parametrize(
    ("token", "says"),
    [
        (None, "set CLAIMWATCH_ADMIN_TOKEN"),
        ("short", f"shorter than {MIN_ADMIN_TOKEN_CHARS} characters"),
        (TOKEN, "Authorization: Bearer <CLAIMWATCH_ADMIN_TOKEN>"),
    ],
)
def test_a_refusal_says_what_to_do(token: str | None, says: str) -> None:
    """The reason names the variable or the header to send."""
    refusal = admin_refusal(token, "Bearer wrong")
    assert refusal is not None and says in refusal[1]


def test_the_admin_token_is_read_from_the_environment_and_never_shown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """CLAIMWATCH_ADMIN_TOKEN sets it; the settings' repr leaves it out."""
    monkeypatch.setenv("CLAIMWATCH_ADMIN_TOKEN", TOKEN)
    settings = WorkerSettings(policy_path=EXAMPLE_POLICY, data_dir=tmp_path)
    assert TOKEN == settings.admin_token
    assert TOKEN not in repr(settings)


def test_faust_serves_none_of_its_own_pages_but_the_plain_index(tmp_path: Path) -> None:
    """No /table, /router, statistics, graph or performance pages: only `/` saying OK."""
    app = build_app(WorkerSettings(policy_path=EXAMPLE_POLICY, data_dir=tmp_path)).app
    expected = [("", "faust.web.apps.production_index:blueprint")]
    assert expected == list(app.web.blueprints._enabled)
