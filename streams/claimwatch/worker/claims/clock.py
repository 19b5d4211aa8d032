"""The partition clocks of the claims edge: stored in the fact table, bounded, repaired.

A partition's clock lives in its processor (`PartitionProcessor.clock_us`); here it is
restored from the table, written back when it moved on, and kept from record times that
run ahead of the worker's wall clock.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Final

from claimwatch.core.processor import PartitionProcessor
from claimwatch.worker.ticks import trusted_until

#: The prefix of bookkeeping keys in the fact table.
CLOCK_PREFIX: Final = b"\x00clock/"
#: How far a partition clock moves on between two writes of it by claims (1 s).
CLOCK_STEP_US: Final = 1_000_000


class PartitionClocks:
    """The clocks of the partitions over one fact table, and the trust given to record times."""

    def __init__(
        self,
        table: MutableMapping[bytes, bytes],
        max_skew_us: int,
        lateness_us: int,
        wall_clock_us: Callable[[], int] | None,
    ) -> None:
        self.table = table
        #: how far claims may legitimately move a clock past the broker's time
        self.max_skew_us = max_skew_us
        self.lateness_us = lateness_us
        #: the worker's wall clock (injected; None in replay and tests: no clock repair)
        self.wall_clock_us = wall_clock_us
        #: the clock last written to the table, per partition
        self._stored: dict[int, int] = {}

    def restored(self, partition: int) -> int | None:
        """The clock the table holds for a partition (None before its first write)."""
        raw = self.table.get(CLOCK_PREFIX + str(partition).encode())
        clock = int(raw) if raw is not None else None
        if clock is not None:
            self._stored[partition] = clock
        return clock

    def bounded(self, stamp_us: int | None, events: list[str]) -> int | None:
        """A record time trusted no further than the wall clock plus `clock_skew`.

        A CreateTime record (written before the worker set its topic to LogAppendTime, or
        on a topic it could not fix) carries whatever time its writer chose; a later time
        is taken as the bound and counted `clock_capped`. Without a wall clock (replay)
        record times are taken as they are: on a LogAppendTime topic the broker stamped
        them before the worker read them, so the cap fires only when the broker's clock
        runs ahead of the worker's by more than the skew, and the counter says so.
        """
        bound = trusted_until(self.wall_clock_us, self.max_skew_us)
        if stamp_us is None or bound is None or stamp_us <= bound:
            return stamp_us
        events.append("clock_capped")
        return bound

    def repair(self, proc: PartitionProcessor, timestamp_us: int | None, events: list[str]) -> None:
        """Bring back a stored clock that is ahead of the wall clock by more than the skew.

        No tick (written at wall time minus lateness, bounded by broker time) nor accepted
        claim can put it there; only a forged tick accepted by an older release can. It is
        set to this record's broker time minus the lateness, as a tick of this record would.
        """
        if self.wall_clock_us is None or proc.clock_us is None:
            return
        now = self.wall_clock_us()
        if proc.clock_us > now + self.max_skew_us:
            events.append("clock_repaired")
            stamp = timestamp_us if timestamp_us is not None else now
            proc.clock_us = min(stamp, now) - self.lateness_us
            self.store(proc, None, force=True)

    def store(self, proc: PartitionProcessor, before: int | None, *, force: bool = False) -> None:
        """Write a partition's clock to the table when it moved on by CLOCK_STEP_US.

        Claims move the clock with every arrival; writing it each time doubled the changelog
        records per claim (and so the records a moved partition must restore). Ticks write
        it always (about once a second). A restarted partition may so start at most
        CLOCK_STEP_US behind; its next record moves it to that record's broker time anyway.
        """
        clock = proc.clock_us
        if clock is None or clock == before:
            return
        stored = self._stored.get(proc.partition)
        if force or stored is None or clock - stored >= CLOCK_STEP_US:
            self.table[CLOCK_PREFIX + str(proc.partition).encode()] = str(clock).encode()
            self._stored[proc.partition] = clock
