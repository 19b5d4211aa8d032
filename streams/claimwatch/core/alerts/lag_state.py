"""The replica-lag detector's state per field, as plain values that convert to and from JSON."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Final

from claimwatch.core.alerts.shape import Alert
from claimwatch.core.alerts.stats import median
from claimwatch.core.plain import Plain, fields_of

#: Recent samples kept per source for the lag figures.
KEEP_SAMPLES: Final = 20


@dataclass(slots=True)
class OwnerValue(Plain):
    """A value the owner claimed for a fact: its first (`since`) and latest (`last`) claim.

    `change` is false for the first value seen of a fact (when it changed is unknown, so it
    gives no lag sample). `caught` lists the sources (as `id_tag`s) that have claimed it
    since; `behind` holds, per source not yet caught, the longest it was seen serving an
    older value.
    """

    status: str
    value: Any
    since: int
    last: int
    change: bool
    caught: list[str] = dc_field(default_factory=list)
    behind: dict[str, int] = dc_field(default_factory=dict)


@dataclass(slots=True)
class FactTrack(Plain):
    """One fact: its last decision's claim ids (as `id_tag`s), the owner's recent values.

    Values oldest first. `pack` is the compact form kept in the fact's own state.
    """

    touched: int
    ids: list[str] = dc_field(default_factory=list)
    values: list[OwnerValue] = dc_field(default_factory=list)

    def pack(self) -> list[Any]:
        """A compact JSON-able form for the fact's own state: lists, no key names.

        `touched` is left out (a fact's state outlives no fact), `last` is kept as its
        distance from `since` (most often 0).
        """
        values = [
            [v.status, v.value, v.since, v.last - v.since, int(v.change), v.caught, v.behind]
            for v in self.values
        ]
        return [self.ids, values]

    @classmethod
    def unpack(cls, packed: list[Any]) -> FactTrack:
        """The track of a `pack`ed form."""
        ids, values = packed
        return cls(
            0,
            list(ids),
            [
                OwnerValue(status, value, since, since + last, bool(change), caught, behind)
                for status, value, since, last, change, caught, behind in values
            ],
        )


@dataclass(slots=True)
class SourceTrack(Plain):
    """One non-primary source of the field: its status and the evidence behind it.

    `samples` are recent [at, lag, low, high] lag samples (µs; high -1 when unknown);
    `verdicts` the most recent conclusive ones as [at, 1] (above the budget) or [at, 0]
    (within it); `behind` maps a fact to the last time the source served it a value older
    than the budget allows (the fact as its `id_tag`); `buckets` hold [start, claims,
    dissent, stale] counts that cover the evaluation window.
    """

    last_claim: int
    seen_at: int
    status: str = "ok"
    last_catch_up: int | None = None
    samples: list[list[int]] = dc_field(default_factory=list)
    verdicts: list[list[int]] = dc_field(default_factory=list)
    behind: dict[str, int] = dc_field(default_factory=dict)
    buckets: list[list[int]] = dc_field(default_factory=list)

    def catch_up(self, at: int, lag: int, low: int, high: int, budget: int, keep: int) -> None:
        """A catch-up: the lag sample, and bounds on the true lag that the claims prove.

        `low` is how long after the owner's first claim of the value the source was still
        seen serving an older one; `high` runs from the owner's last claim of the previous
        value to this claim (-1 when unknown). The verdict is conclusive only when the
        bounds settle it: low above the budget, or high within it.
        """
        self.samples.append([at, lag, low, high])
        del self.samples[:-KEEP_SAMPLES]
        self.last_catch_up = at if self.last_catch_up is None else max(self.last_catch_up, at)
        if low > budget:
            self.verdicts.append([at, 1])
        elif 0 <= high <= budget:
            self.verdicts.append([at, 0])
        else:
            return  # nobody asked often enough to tell: inconclusive, not a guess
        del self.verdicts[:-keep]

    def tally(self, now: int, bucket_us: int, horizon: int, dissent: bool, stale: bool) -> None:
        """Count one claim in the bucket of `now`; forget buckets that end before `horizon`."""
        bucket = now - now % bucket_us
        if not self.buckets or self.buckets[-1][0] != bucket:
            self.buckets = [b for b in self.buckets if b[0] + bucket_us > horizon]
            self.buckets.append([bucket, 0, 0, 0])
        counts = self.buckets[-1]
        counts[1] += 1
        counts[2] += int(dissent)
        counts[3] += int(stale)

    def figures(self, horizon: int, bucket_us: int) -> Alert:
        """Lag figures, claim count and dissent and stale ratios for an alert."""
        self.buckets = [b for b in self.buckets if b[0] + bucket_us > horizon]
        claims = sum(b[1] for b in self.buckets)
        lags = [s[1] / 1e6 for s in self.samples]
        return {
            "lag_seconds": {
                "median": median(lags) if lags else None,
                "max": max(lags) if lags else None,
                "samples": len(lags),
                "over_budget": sum(v for _, v in self.verdicts),
                "behind_facts": len(self.behind),
            },
            "claims": claims,
            "dissent_ratio": round(sum(b[2] for b in self.buckets) / claims, 6) if claims else 0.0,
            "stale_ratio": round(sum(b[3] for b in self.buckets) / claims, 6) if claims else 0.0,
        }


@dataclass(slots=True)
class LagState(Plain):
    """The detector's state for one field: facts it follows and the sources it judges.

    `decisions` counts the field's decisions that brought new claims (silence is judged
    against it, so a quiet field does not make its sources look silent).
    """

    field: str
    clock: int | None = None
    decisions: int = 0
    facts: dict[str, FactTrack] = dc_field(default_factory=dict)
    sources: dict[str, SourceTrack] = dc_field(default_factory=dict)
    #: claims of new sources not followed: the field already judges MAX_SOURCES
    dropped_sources: int = 0

    def to_obj(self, facts: bool = True) -> dict[str, Any]:
        """A JSON-able copy of the state (for a table or a checkpoint).

        `facts=False` leaves the fact tracks out, for a store that keeps each on its own
        (`from_obj` of such a copy follows no facts yet).
        """
        return fields_of(self, **({} if facts else {"facts": None}))
