"""Deployments keep to themselves: the default app id follows the topic prefix."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.worker.app import build_app
from claimwatch.worker.settings import WorkerSettings, default_app_id

from tests.support.paths import EXAMPLE_POLICY


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("claimwatch.", "claimwatch"),  # existing deployments keep their group and changelogs
        ("staging.", "claimwatch-staging."),
        ("claimwatch", "claimwatch-claimwatch"),
        ("", "claimwatch-"),
    ],
)
def test_the_default_app_id_is_the_prefixs_own(prefix: str, expected: str) -> None:
    """One app id per prefix; the default prefix keeps the id it always had."""
    assert expected == default_app_id(prefix)
    assert expected == WorkerSettings(policy_path=EXAMPLE_POLICY, prefix=prefix).app


def test_an_explicit_app_id_wins() -> None:
    """--app-id names the group whatever the prefix."""
    assert "mine" == WorkerSettings(policy_path=EXAMPLE_POLICY, prefix="a.", app_id="mine").app


def test_two_prefixes_make_two_consumer_groups_and_state_dirs(tmp_path: Path) -> None:
    """Workers of two deployments on one broker and one data directory share nothing."""
    apps = [
        build_app(WorkerSettings(policy_path=EXAMPLE_POLICY, prefix=p, data_dir=tmp_path)).app
        for p in ("one.", "two.")
    ]
    assert ["claimwatch-one.", "claimwatch-two."] == [a.conf.id for a in apps]
    assert apps[0].conf.tabledir != apps[1].conf.tabledir
