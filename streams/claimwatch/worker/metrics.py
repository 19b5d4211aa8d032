"""Prometheus series of the worker (base units, `_total` counters, bounded label values)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from claimwatch.core.policy import CompiledPolicy


class Metrics:
    """The worker's series on one registry; label values bounded by the policy."""

    def __init__(self, policy: CompiledPolicy, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._fields = set(policy.policy.fields)
        self._sources = set(policy.policy.sources)
        r = self.registry
        self.claims = Counter(
            "claimwatch_claims_total",
            "Claims processed, by field, source and status",
            ["field", "source", "status"],
            registry=r,
        )
        self.decisions = Counter(
            "claimwatch_decisions_total",
            "Decisions emitted, by field and outcome",
            ["field", "outcome"],
            registry=r,
        )
        self.conflicts = Counter(
            "claimwatch_conflicts_total",
            "Facts entering conflict, by field and kind",
            ["field", "kind"],
            registry=r,
        )
        self.dead_letters = Counter(
            "claimwatch_dlq_messages_total",
            "Messages sent to the dead-letter topic, by reason",
            ["reason"],
            registry=r,
        )
        self.events = Counter(
            "claimwatch_stream_events_total",
            "Stream events (duplicate, rerouted, tick, ...)",
            ["event"],
            registry=r,
        )
        self.latency = Histogram(
            "claimwatch_resolve_latency_seconds",
            "Time to process one claims record",
            registry=r,
            buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1),
        )
        self.recovered = Gauge(
            "claimwatch_worker_ready",
            "1 once the worker has finished recovery",
            registry=r,
        )
        self.alerts_firing = Gauge(
            "claimwatch_alerts_firing",
            "1 while an alert of the worker's detectors fires",
            ["kind", "field", "source"],
            registry=r,
        )
        self.source_status = Gauge(
            "claimwatch_source_status",
            "1 for the current status of a source on a field",
            ["source", "field", "status"],
            registry=r,
        )
        self.source_lag = Gauge(
            "claimwatch_source_lag_seconds",
            "Recent lag of a source behind the field's owner",
            ["source", "field"],
            registry=r,
        )
        self.source_dissent = Gauge(
            "claimwatch_source_dissent_ratio",
            "Share of a source's claims outranked by another value",
            ["source", "field"],
            registry=r,
        )
        self.internal_errors = Counter(
            "claimwatch_internal_errors_total",
            "Records whose handling raised; each went to the DLQ as internal_error",
            ["topic"],
            registry=r,
        )
        self.quarantined_facts = Counter(
            "claimwatch_quarantined_facts_total",
            "Facts set aside because handling them raised: decided rejected, claims to the DLQ",
            ["feature", "field"],
            registry=r,
        )
        self.agent_crashes = Counter(
            "claimwatch_agent_crashes_total",
            "Agents that stopped on an exception (Faust restarts them)",
            ["agent"],
            registry=r,
        )
        self.consumer_lag = Gauge(
            "claimwatch_consumer_lag_records",
            "Records not yet committed by this worker: end offset minus committed offset",
            ["topic", "partition"],
            registry=r,
        )
        self.quarantined = Counter(
            "claimwatch_quarantined_total",
            "Keys of a feature (a verdict request, a document, a plan, a fact's plan state, "
            "a detector's field) whose handling raised or outgrew its bound: answered or "
            "reset, the rest of the partition went on",
            ["feature"],
            registry=r,
        )
        self.producer_errors = Counter(
            "claimwatch_producer_errors_total",
            "Records the producer refused (too large, ...): dropped and logged, not sent",
            ["topic"],
            registry=r,
        )
        for feature in ("verdicts", "documents", "plans", "alerts"):
            self.quarantined.labels(feature)
        self._firing: dict[str, str] = {}
        self._initialize(policy)

    def _initialize(self, policy: CompiledPolicy) -> None:
        """Create every bounded series at zero so dashboards and rules see them from the start."""
        fields = [*sorted(self._fields), "other"]
        for field in fields:
            for outcome in ("resolved", "conflict", "insufficient", "rejected"):
                self.decisions.labels(field, outcome)
            for kind in ("value", "existence"):
                self.conflicts.labels(field, kind)
            self.alerts_firing.labels("conflict_spike", field, "other")
        for reason in DLQ_REASONS:
            self.dead_letters.labels(reason)
        self.quarantined_facts.labels("claims", "other")
        # a series the paging rules can rate() before the first claim arrives
        self.claims.labels("other", "other", "ok")
        for field in sorted(self._fields):
            owner = policy.rule(field).owner
            for source in sorted(self._sources):
                if owner is not None and source == owner:
                    continue
                self.source_status.labels(source, field, "ok").set(1)
                for status in ("lagging", "stalled", "silent"):
                    self.source_status.labels(source, field, status).set(0)
                self.source_lag.labels(source, field)
                self.source_dissent.labels(source, field)

    def observe_alert(self, alert: Mapping[str, Any]) -> None:
        """Reflect one detector alert in the gauges the paging rules read."""
        field = self.field(str(alert.get("field", "")))
        if alert.get("kind") == "conflict_spike":
            top = [s["source"] for s in alert.get("sources", [])[:1]]
            source = self.source(top[0]) if top else "other"
            if alert.get("status") == "firing":
                self._firing[field] = source
                self.alerts_firing.labels("conflict_spike", field, source).set(1)
            else:
                self.alerts_firing.labels(
                    "conflict_spike", field, self._firing.pop(field, source)
                ).set(0)
            return
        self.observe_source(field, str(alert.get("source", "")), str(alert.get("status", "ok")))

    def observe_source(
        self,
        field: str,
        source: str,
        status: str,
        lag: float | None = None,
        dissent: float | None = None,
    ) -> None:
        """The current status (one-hot), lag and dissent ratio of a source on a field."""
        field, label = self.field(field), self.source(source)
        for each in ("ok", "lagging", "stalled", "silent"):
            self.source_status.labels(label, field, each).set(1 if each == status else 0)
        if lag is not None:
            self.source_lag.labels(label, field).set(lag)
        if dissent is not None:
            self.source_dissent.labels(label, field).set(dissent)

    def field(self, name: str) -> str:
        """The label value of a field: its name when the policy knows it, else `other`."""
        return name if name in self._fields else "other"

    def source(self, name: str) -> str:
        """The label value of a source: registered id or its service part, else `other`."""
        if name in self._sources:
            return name
        base = name.split("@", 1)[0]
        return base if base in self._sources else "other"


class Tally:
    """Counter increments summed in memory and added to their series by `flush`.

    The claims agent counts several series per record; each `labels(...).inc()` takes the
    series' lock and builds its label tuple (about 2 % of the worker's time). It tallies a
    batch of records here instead and flushes once the batch is handled: a scrape sees the
    counts at most one batch (10 ms, 500 records) late.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[Counter, tuple[str, ...]], int] = {}

    def add(self, counter: Counter, *labels: str) -> None:
        """One more of `counter` with these label values."""
        key = (counter, labels)
        self._counts[key] = self._counts.get(key, 0) + 1

    def flush(self) -> None:
        """Add what was tallied to the series, and start again from nothing."""
        counts, self._counts = self._counts, {}
        for (counter, labels), n in counts.items():
            counter.labels(*labels).inc(n)


def increment(counter: Counter, *labels: str) -> None:
    """One more of `counter` with these label values, at once (what a `Tally` defers)."""
    counter.labels(*labels).inc()


#: The bounded label values of DLQ reasons.
DLQ_REASONS = (
    "not_json",
    "too_large",
    "missing_key",
    "bad_key",
    "duplicate_id",
    "bad_signature",
    "ahead_of_clock",
    "expired",
    "contract",
    "tombstone",
    "internal_error",
    "other",
)


def dlq_reason_label(reason: str) -> str:
    """A bounded label for a DLQ reason."""
    lowered = reason.lower()
    for label, needle in (
        ("internal_error", "internal_error:"),
        ("tombstone", "tombstone"),
        ("bad_signature", "bad_signature:"),
        ("not_json", "not json"),
        ("too_large", "exceeds"),
        ("missing_key", "missing required"),
        ("bad_key", "must be a non-empty"),
        ("duplicate_id", "already used"),
        ("ahead_of_clock", "ahead of the partition clock"),
        ("expired", "too old"),
        ("contract", "`value`"),
        ("contract", "observed_at"),
        ("contract", "status"),
        ("contract", "contract_version"),
        ("contract", "is not in policy"),
    ):
        if needle in lowered:
            return label
    return "other"
