"""The demo's dashboard: facts as they stand, conflicts, alerts and sources, from the topics.

A `Board` takes decision and alert records (and the story's truth lines) and keeps what a
person watching needs: each fact's current outcome, value, action and winning source; the
conflicts entering and leaving; the alerts firing and resolving; each source's lag status.
Every input returns the log lines it is worth (none for a decision that leaves a fact's
outcome, value and action as they were: the topic still carries every decision), which
`--plain` prints and the dashboard keeps as its recent events. `render` draws it all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from claimwatch.client.decisions import OUTCOME_STYLES, display_value

ACTION_STYLES: Final = {"proceed": "green", "degrade": "yellow", "escalate": "red"}
STATUS_STYLES: Final = {"ok": "green", "lagging": "yellow", "stalled": "red", "silent": "red"}
#: Rows and events the dashboard shows at most.
MAX_FACTS: Final = 18
MAX_EVENTS: Final = 8


@dataclass(slots=True)
class FactView:
    """A fact as its latest decision leaves it."""

    subject: str
    field: str
    outcome: str
    value: str
    action: str
    winner: str
    at: str


def _clock(stamp: Any) -> str:
    text = str(stamp or "")
    return text[11:19] if len(text) >= 19 else text


def _winner(record: Mapping[str, Any]) -> str:
    """Who the decision went with, and how far to trust it; or who contradicts whom."""
    claims = record.get("claims") or []
    won = [c for c in claims if c.get("disposition") == "won"]
    if won:
        claim = won[0]
        source, authority = str(claim.get("source")), str(claim.get("authority", ""))
        trust = "asserted, not verified" if authority == "asserted" else authority
        text = f"{source} ({trust})"
        dissent = list(
            dict.fromkeys(
                str(c.get("source"))
                for c in claims
                if c.get("dissent") and str(c.get("source")) != source
            )
        )
        if dissent:
            text += f"; {', '.join(dissent)} outranked, dissenting"
        return text
    against = [
        f"{c.get('source')} {display_value(c.get('value'))}"
        for c in claims
        if c.get("disposition") == "contradicting"
    ]
    return " vs ".join(against) if against else "-"


class Board:
    """What the demo shows, built from the records as they come."""

    def __init__(self, mine: Callable[[Mapping[str, Any]], bool] = lambda r: True) -> None:
        self.mine = mine
        self.facts: dict[str, FactView] = {}
        self.sources: dict[tuple[str, str], str] = {}
        self.firing: dict[str, str] = {}
        self.conflicts: deque[Text] = deque(maxlen=MAX_EVENTS)
        self.alerts: deque[Text] = deque(maxlen=MAX_EVENTS)
        self.story: deque[Text] = deque(maxlen=4)
        self.decisions = 0

    def decision(self, record: Mapping[str, Any]) -> list[Text]:
        """Take in a decision; the lines it is worth (none when nothing a person sees moved)."""
        if not self.mine(record):
            return []
        self.decisions += 1
        key = f"{record.get('subject')}|{record.get('field')}"
        before = self.facts.get(key)
        view = FactView(
            str(record.get("subject")),
            str(record.get("field")),
            str(record.get("outcome")),
            display_value(record.get("value")),
            str(record.get("action")),
            _winner(record),
            _clock(record.get("decided_at")),
        )
        self.facts[key] = view
        self._sources_of(record)
        lines = []
        if before is None or (before.outcome, before.value, before.action) != (
            view.outcome,
            view.value,
            view.action,
        ):
            lines.append(_decision_line(view))
        was = before.outcome if before is not None else None
        if view.outcome == "conflict" and was != "conflict":
            lines.append(self._event(view.at, "conflict enters", view, "bold red"))
        elif was == "conflict" and view.outcome != "conflict":
            lines.append(self._event(view.at, "conflict leaves", view, "green"))
        return lines

    def alert(self, record: Mapping[str, Any]) -> list[Text]:
        """Take in a detector's alert; its line."""
        kind, status = str(record.get("kind")), str(record.get("status"))
        field = str(record.get("field"))
        at = _clock(record.get("window_end"))
        line = Text(f"{at:<9}", style="dim")
        if kind == "conflict_spike":
            if status == "firing":
                self.firing[f"conflict_spike {field}"] = at
                count, expected = record.get("count"), record.get("expected")
                detail = f"{count} facts entered conflict, {expected} expected"
            else:
                self.firing.pop(f"conflict_spike {field}", None)
                detail = "quiet again"
            line.append(f"ALERT conflict_spike on {field} {status}", style=_alert_style(status))
            line.append(f"  {detail}", style="dim")
        else:
            source = str(record.get("source"))
            self.sources[(source, field)] = status
            name = f"replica_lag {source} {field}"
            if status == "ok":
                self.firing.pop(name, None)
            else:
                self.firing[name] = at
            line.append(
                f"ALERT replica_lag {source} on {field}: {status}", style=_alert_style(status)
            )
            line.append(f"  (was {record.get('previous_status')})", style="dim")
        self.alerts.append(line)
        return [line]

    def truth(self, text: str) -> list[Text]:
        """A line of the story's ground truth (what was injected, as it happens)."""
        line = Text(text, style="blue")
        self.story.append(line)
        return [line]

    def _sources_of(self, record: Mapping[str, Any]) -> None:
        """Every non-winning source seen on a field starts `ok` (until an alert says else)."""
        field = str(record.get("field"))
        for claim in record.get("claims") or []:
            if claim.get("authority") != "system_of_record":
                self.sources.setdefault((str(claim.get("source")), field), "ok")

    def _event(self, at: str, what: str, view: FactView, style: str) -> Text:
        line = Text(f"{at:<9}", style="dim")
        line.append(f"{what} ", style=style)
        line.append(f"{view.subject} {view.field}", style="cyan")
        line.append(f"  {view.winner if view.outcome == 'conflict' else view.value}", style="dim")
        self.conflicts.append(line)
        return line

    def render(self) -> RenderableType:
        """The dashboard: the facts that matter most, conflicts, alerts, sources, the story."""
        facts = Table(title=f"facts ({len(self.facts)}; {self.decisions} decisions)", expand=True)
        for name in ("updated", "fact", "outcome", "value", "action", "decided with"):
            facts.add_column(name, no_wrap=name != "decided with", overflow="ellipsis")
        for key, view in sorted(self.facts.items(), key=_interest)[:MAX_FACTS]:
            facts.add_row(
                view.at,
                Text(key.replace("|", " "), style="cyan"),
                Text(view.outcome, style=OUTCOME_STYLES.get(view.outcome, "")),
                Text(view.value, style="bold"),
                Text(view.action, style=ACTION_STYLES.get(view.action, "")),
                view.winner,
            )
        sources = Table(title="sources (replica lag)")
        sources.add_column("source")
        sources.add_column("field")
        sources.add_column("status")
        for (source, field), status in sorted(self.sources.items()):
            sources.add_row(source, field, Text(status, style=STATUS_STYLES.get(status, "")))
        firing = ", ".join(sorted(self.firing)) or "none"
        none = [Text("  none yet", style="dim")]
        return Group(
            facts,
            Text("conflicts entering and leaving", style="bold"),
            *(self.conflicts or none),
            Text("alerts", style="bold"),
            *(self.alerts or none),
            Text(f"firing now: {firing}", style="bold red" if self.firing else "green"),
            sources,
            Text("the story (ground truth)", style="bold"),
            *(self.story or [Text("  nothing injected yet", style="dim")]),
        )


def _interest(item: tuple[str, FactView]) -> tuple[int, str, str]:
    """Facts in conflict first, then those not to act on, then dissent; the rest by key."""
    key, view = item
    if view.outcome == "conflict":
        rank = 0
    elif view.action != "proceed":
        rank = 1
    elif "dissenting" in view.winner:
        rank = 2
    else:
        rank = 3
    return rank, view.subject.split(":")[-1].zfill(12), key


def _alert_style(status: str) -> str:
    return "green" if status in ("ok", "resolved") else "bold red"


def _decision_line(view: FactView) -> Text:
    line = Text(f"{view.at:<9}", style="dim")
    line.append(f"{view.subject} {view.field}".ljust(32), style="cyan")
    line.append(f"{view.outcome:<13}", style=OUTCOME_STYLES.get(view.outcome, ""))
    line.append(f"{view.value:<12} ", style="bold")
    line.append(f"{view.action:<9}", style=ACTION_STYLES.get(view.action, ""))
    line.append(view.winner, style="dim")
    return line
