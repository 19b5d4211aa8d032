"""compose/docker-compose.yml: valid without an engine, and the stack the README describes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.metrics import COMPOSE

COMPOSE_FILE = COMPOSE / "docker-compose.yml"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return loaded


def test_the_compose_file_passes_docker_compose_config() -> None:
    """Debian's docker-compose validates the file against its schema (no engine needed)."""
    tool = shutil.which("docker-compose")
    assert tool is not None, "docker-compose is not installed: run `make tools`"
    done = subprocess.run(
        [tool, "-f", str(COMPOSE_FILE), "config", "-q"], capture_output=True, text=True
    )
    assert (0, "") == (done.returncode, done.stderr)


def test_the_stack_has_the_broker_worker_and_on_call_services() -> None:
    """Broker, worker, Prometheus, Alertmanager and Grafana, each state in a named volume."""
    compose = _compose()
    assert {"kafka", "worker", "prometheus", "alertmanager", "grafana"} == set(compose["services"])
    named = set(compose["volumes"])
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith(".") or source in named, volume


def test_the_worker_runs_as_the_readme_starts_it_reachable_by_prometheus() -> None:
    """Default store (no --store), state in its volume, bound for other containers."""
    worker = _compose()["services"]["worker"]
    command = worker["command"]
    options = dict(zip(command[2::2], command[3::2], strict=True))
    assert ["claimwatch", "worker"] == command[:2]
    assert "--store" not in options
    assert "worker-data:/app/.cache/worker" in worker["volumes"]
    assert ("/app/.cache/worker", "worker", "0.0.0.0") == (
        options["--data-dir"],
        options["--web-host"],
        options["--web-bind"],
    )
    prometheus = yaml.safe_load((COMPOSE / "prometheus" / "prometheus.yml").read_text())
    assert ["worker:6066"] == prometheus["scrape_configs"][0]["static_configs"][0]["targets"]


@pytest.mark.parametrize(
    ("service", "mounted"),
    [
        ("prometheus", "./prometheus/rules.yml"),
        ("prometheus", "./prometheus/prometheus.yml"),
        ("alertmanager", "./alertmanager/alertmanager.yml"),
        ("grafana", "./grafana/provisioning"),
        ("grafana", "./grafana/claimwatch-dashboard.json"),
    ],
)
def test_the_services_run_the_projects_own_files(service: str, mounted: str) -> None:
    """The rules, routes, datasource and dashboard mounted are the ones tested here."""
    volumes = _compose()["services"][service]["volumes"]
    assert any(v.split(":")[0] == mounted for v in volumes)
    assert (COMPOSE / mounted).exists()


def test_grafana_provisions_the_prometheus_datasource_and_the_dashboard_folder() -> None:
    """The datasource points at the compose Prometheus; the dashboards' path is the mount."""
    provisioning = COMPOSE / "grafana" / "provisioning"
    sources = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())
    boards = yaml.safe_load((provisioning / "dashboards" / "claimwatch.yml").read_text())
    (source,) = sources["datasources"]
    assert ("prometheus", "http://prometheus:9090", True) == (
        source["type"],
        source["url"],
        source["isDefault"],
    )
    mounts = _compose()["services"]["grafana"]["volumes"]
    path = boards["providers"][0]["options"]["path"]
    assert any(Path(v.split(":")[1]).parent == Path(path) for v in mounts if "dashboard" in v)
