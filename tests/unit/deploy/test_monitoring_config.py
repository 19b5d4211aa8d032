"""The Prometheus rules, their unit tests and the Alertmanager config pass the upstream tools."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from claimwatch.wire.topics import TopicNames

from tests.support.metrics import COMPOSE, named_metrics


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


#: The series names a metric family of each type exposes.
SERIES_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def test_rules_and_dashboard_name_only_metrics_the_worker_defines() -> None:
    """No rule or panel names a metric that the worker's registry does not have.

    Labelled series with no child yet (claimwatch_agent_crashes_total before a crash) have no
    sample in a scrape, so the names come from the registry's families, not from the samples.
    """
    from claimwatch.policy.loading import load_policy
    from claimwatch.worker.metrics import Metrics

    defined: set[str] = set()
    for family in Metrics(load_policy("examples/policy.yaml")).registry.collect():
        defined |= {s.name for s in family.samples}
        defined |= {family.name + s for s in SERIES_SUFFIXES.get(family.type, ("",))}
    assert set() == named_metrics() - defined


def rule(name: str) -> dict[str, Any]:
    """One alerting rule of rules.yml, by its alert name."""
    groups = yaml.safe_load((COMPOSE / "prometheus" / "rules.yml").read_text())["groups"]
    (found,) = [r for g in groups for r in g["rules"] if r.get("alert") == name]
    return dict(found)


@pytest.mark.parametrize("prefix", ["claimwatch.", "", "demo.", "team-a_"])
def test_worker_stalled_reads_the_lag_of_the_claims_topic_only(prefix: str) -> None:
    """The stalled-worker rule reads the lag of `<prefix>claims` only, `claims.dlq` excluded.

    Prometheus anchors the regex; so does `re.fullmatch`.
    """
    pattern = re.search(r'topic=~"([^"]+)"', rule("ClaimwatchWorkerStalled")["expr"])
    assert pattern is not None
    names = TopicNames(prefix)
    topics = set(names.every())
    assert {names.claims, names.dlq, names.alerts_input, names.verdicts, names.plans} <= topics
    assert {names.claims} == {t for t in topics if re.fullmatch(pattern.group(1), t)}
