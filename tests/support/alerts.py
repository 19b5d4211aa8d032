"""Decision streams for the detectors: facts decided by the real resolver, lagging replicas."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from claimwatch.core.alerts import Alert, LagState, ReplicaLag
from claimwatch.core.alerts.entry import DetectorEntry, entry_of
from claimwatch.core.alerts.lag_state import FactTrack
from claimwatch.core.claim import Claim, fact_key
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.resolve import resolve
from claimwatch.core.timeutil import format_rfc3339

from tests.support.claims import claim
from tests.support.clocks import SECOND, T0

REPLICA = "reporting-replica@eu-west-1"


class Facts:
    """Claims per fact, decided with the real resolver; a decision per observation."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self.claims: dict[str, list[Claim]] = defaultdict(list)
        self.count = 0

    def observe(self, subject: str, at: int, *answers: tuple[str, ...]) -> dict[str, Any]:
        """Sources answer (source, value[, lineage]) at `at`; the fact is decided 2 s later."""
        for source, value, *lineage in answers:
            self.count += 1
            extra = {"lineage": lineage[0]} if lineage else {}
            cid, observed = f"c{self.count:05d}", format_rfc3339(at)
            self.claims[subject].append(
                claim(cid, source, value, subject=subject, observed_at=observed, **extra)
            )
        live = [c for c in self.claims[subject] if (c.observed_us or 0) >= at - 90 * SECOND]
        self.claims[subject] = live
        return resolve(live, self.policy, at + 2 * SECOND)


class Entries:
    """The detectors' entries a claims partition makes of decisions, fact by fact."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.policy = policy
        self.tracks: dict[str, FactTrack] = {}
        self.outcomes: dict[str, str] = {}

    def of(self, decision: dict[str, Any], now: int) -> DetectorEntry:
        """The entry of a fact's next decision, made at clock time `now`."""
        key = fact_key(decision["subject"], decision["field"])
        previous = self.outcomes.get(key)
        self.tracks[key], entry = entry_of(
            self.policy, self.tracks.get(key), decision, previous, now
        )
        self.outcomes[key] = decision["outcome"]
        return entry


class Feed:
    """A lag detector fed through `Facts`, collecting alerts."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.facts = Facts(policy)
        self.detector = ReplicaLag(policy)
        self.state: LagState | None = None
        self.alerts: list[Alert] = []

    def observe(self, subject: str, at: int, *answers: tuple[str, ...]) -> dict[str, Any]:
        decision = self.facts.observe(subject, at, *answers)
        self.state, out = self.detector.step(self.state, decision, at + 2 * SECOND)
        self.alerts += out
        return decision

    def advance(self, now: int) -> None:
        assert self.state is not None
        self.state, out = self.detector.advance(self.state, now)
        self.alerts += out

    def statuses(self) -> list[tuple[str, str]]:
        return [(a["status"], a.get("previous_status", "")) for a in self.alerts]


def warm_up(feed: Feed, subjects: list[str]) -> None:
    """Every fact's first value, and one change the replica picks up 2 s late (a catch-up)."""
    for i, subject in enumerate([*subjects, "invoice:warm"]):
        feed.observe(subject, T0 + i * SECOND, ("billing-api", "unpaid"), (REPLICA, "unpaid"))
    feed.observe("invoice:warm", T0 + 50 * SECOND, ("billing-api", "paid"), (REPLICA, "unpaid"))
    feed.observe("invoice:warm", T0 + 52 * SECOND, (REPLICA, "paid"))


def lagging_changes(feed: Feed, subjects: list[str], at: int, old: str, new: str) -> None:
    """Owner moves each fact to `new` at `at` (+1 s apart); the replica lags 100 s behind."""
    for phase, answers in ((0, "both"), (70, "old"), (100, "new")):
        for i, subject in enumerate(subjects):
            moment = at + (phase + i) * SECOND
            if answers == "both":
                feed.observe(subject, moment, ("billing-api", new), (REPLICA, old))
            else:
                feed.observe(subject, moment, (REPLICA, old if answers == "old" else new))
