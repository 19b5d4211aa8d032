"""The detectors' entries of new decisions, staged per field and sent in few records.

One record per field (more past ENTRIES_PER_RECORD), to the field's home partition:
claims cost the detectors a few records a second instead of one per decision.
"""

from __future__ import annotations

from typing import Final

from claimwatch.core.alerts.entry import DetectorEntry
from claimwatch.wire.codec import dumps
from claimwatch.wire.partitioning import partition_for
from claimwatch.worker.outgoing import Outgoing

#: Most detector entries in one alerts-input record (a record stays far below 1 MB).
ENTRIES_PER_RECORD: Final = 500


class StagedEntries:
    """The entries staged since the last drain, per field (its bounded name)."""

    def __init__(self, topic: str, partitions: int) -> None:
        #: the alerts-input topic, and its partition count
        self.topic = topic
        self.partitions = partitions
        self._entries: dict[str, list[DetectorEntry]] = {}

    def stage(self, alerts: list[tuple[str, DetectorEntry]]) -> None:
        """Take in (field, entry) pairs; `alerts` is left empty."""
        for name, entry in alerts:
            self._entries.setdefault(name, []).append(entry)
        alerts.clear()

    def full(self) -> bool:
        """Whether some field has a whole record's worth of entries staged."""
        return any(len(e) >= ENTRIES_PER_RECORD for e in self._entries.values())

    def drain(self) -> list[Outgoing]:
        """The alerts-input records of the entries staged since the last drain."""
        sends = []
        for name, entries in self._entries.items():
            key = name.encode()
            home = partition_for(key, self.partitions)
            for at in range(0, len(entries), ENTRIES_PER_RECORD):
                part = entries[at : at + ENTRIES_PER_RECORD]
                body = dumps({"field": name, "entries": part})
                sends.append(Outgoing(self.topic, key, body, home))
        self._entries.clear()
        return sends
