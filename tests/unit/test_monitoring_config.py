"""The Prometheus rules, their unit tests and the Alertmanager config pass the upstream tools."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "compose"
METRIC = re.compile(r"\bclaimwatch_[a-z_]+\b")


def tool(name: str) -> str:
    """The path of a Prometheus tool; `make test` installs them, so a missing one fails."""
    path = shutil.which(name)
    assert path is not None, f"{name} is not installed: run `make tools` (Debian: prometheus)"
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run a tool in compose/prometheus and return its result."""
    return subprocess.run(args, cwd=COMPOSE / "prometheus", capture_output=True, text=True)


def test_rules_are_valid() -> None:
    """The alerting rules pass `promtool check rules`."""
    result = run(tool("promtool"), "check", "rules", "rules.yml")
    assert 0 == result.returncode, result.stdout + result.stderr


def test_rules_unit_tests_pass() -> None:
    """Rule unit tests (promtool): every rule fires and clears when its unit tests say it should."""
    result = run(tool("promtool"), "test", "rules", "rules_test.yml")
    assert 0 == result.returncode, result.stdout + result.stderr


def test_alertmanager_config_is_valid() -> None:
    """The Alertmanager configuration passes `amtool check-config`."""
    result = run(tool("amtool"), "check-config", "../alertmanager/alertmanager.yml")
    assert 0 == result.returncode, result.stdout + result.stderr


def test_lag_alert_inhibits_the_same_sources_conflict_alert() -> None:
    """A replica-lag alert for a source silences that source's conflict-spike alerts."""
    config = yaml.safe_load((COMPOSE / "alertmanager" / "alertmanager.yml").read_text())
    rule = config["inhibit_rules"][0]
    assert ['alertname="ClaimwatchReplicaLag"'] == rule["source_matchers"]
    assert ['alertname="ClaimwatchConflictSpike"'] == rule["target_matchers"]
    assert ["source"] == rule["equal"]
    assert ["alertname", "field"] == config["route"]["group_by"]


def test_every_rule_has_severity_summary_description_and_for() -> None:
    """Paging rules carry what the on-call engineer needs."""
    groups = yaml.safe_load((COMPOSE / "prometheus" / "rules.yml").read_text())["groups"]
    for rule in (r for g in groups for r in g["rules"]):
        assert {"severity"} <= set(rule["labels"]), rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        assert "for" in rule, rule["alert"]


def named_metrics() -> set[str]:
    """Every claimwatch metric named by the rules and the Grafana dashboard."""
    text = (COMPOSE / "prometheus" / "rules.yml").read_text()
    dashboard = json.loads((COMPOSE / "grafana" / "claimwatch-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    return set(METRIC.findall(text)) | {m for e in exprs for m in METRIC.findall(e)}


def test_rules_and_dashboard_name_only_metrics_the_worker_defines() -> None:
    """No rule or panel names a metric that the worker's registry does not have."""
    from prometheus_client import generate_latest

    from streams.metrics import Metrics
    from streams.policy_file import load_policy

    scrape = generate_latest(Metrics(load_policy("examples/policy.yaml")).registry).decode()
    missing = {m for m in named_metrics() if f"\n{m}" not in "\n" + scrape}
    assert set() == missing
