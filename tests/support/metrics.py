"""The metric names the worker declares."""

from __future__ import annotations

import json
import re
from pathlib import Path

COMPOSE = Path(__file__).resolve().parents[2] / "compose"
METRIC = re.compile(r"\bclaimwatch_[a-z_]+\b")


def named_metrics() -> set[str]:
    """Every claimwatch metric named by the rules and the Grafana dashboard."""
    text = (COMPOSE / "prometheus" / "rules.yml").read_text()
    dashboard = json.loads((COMPOSE / "grafana" / "claimwatch-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    return set(METRIC.findall(text)) | {m for e in exprs for m in METRIC.findall(e)}
