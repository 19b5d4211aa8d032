"""The wired worker's Faust names are the ones earlier releases stored state and offsets under."""

from __future__ import annotations

from typing import Any

from claimwatch.worker.run import wire
from claimwatch.worker.settings import WorkerSettings

from tests.support.paths import REPO

#: agent name (the module that holds the agent, and its function) -> its input topics
AGENTS = {
    "claimwatch.worker.alerts.agents.detect": ["p.alerts.input"],
    "claimwatch.worker.claims.agents.process_claims": ["p.claims"],
    "claimwatch.worker.verdicts.agents.process_verdicts": ["p.verdicts"],
    "claimwatch.worker.docs.agents.process_docs": ["p.publish"],
    "claimwatch.worker.plans.agents.process_plan_facts": ["p.plans.interest"],
    "claimwatch.worker.plans.agents.process_plans": ["p.plans", "p.plans.updates"],
}
#: table name -> changelog topic: the local stores and their changelogs a new release resumes
TABLES = {
    "detectors": ["p.a.detectors-changelog"],
    "docs": ["p.a.docs-changelog"],
    "facts": ["p.a.facts-changelog"],
    "plan_facts": ["p.a.plan-facts-changelog"],
    "plans": ["p.a.plans-changelog"],
    "resolutions": ["p.resolutions"],
    "verdicts": ["p.a.verdicts-changelog"],
}


def _wired_app() -> Any:
    settings = WorkerSettings(
        policy_path=REPO / "examples" / "policy.yaml", prefix="p.", app_id="a"
    )
    return wire(settings).pipe.app


def test_agents_keep_their_names_and_input_topics() -> None:
    """Every agent is named explicitly, as before the layout by feature."""
    app = _wired_app()
    actual = {name: sorted(a.channel.topics) for name, a in app.agents.items()}
    assert AGENTS == actual


def test_tables_keep_their_names_and_changelog_topics() -> None:
    """A worker of this layout reopens the local stores and changelogs an older one wrote."""
    app = _wired_app()
    actual = {t.name: sorted(t.changelog_topic.topics) for t in app.tables.values()}
    assert TABLES == actual


def test_the_consumer_group_is_the_app_id() -> None:
    """Committed offsets are found under the same group."""
    app = _wired_app()
    assert "a" == app.conf.id
