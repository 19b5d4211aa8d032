"""What a replay is asked to do, and where its decisions go as they are made."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from claimwatch.audit.diff import compared_part
from claimwatch.core.claim import fact_key
from claimwatch.core.policy import CompiledPolicy


@dataclass(slots=True)
class ReplayRequest:
    """What to replay, from where, and where the results go."""

    policy: CompiledPolicy
    input: Path | None = None
    topic: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    bootstrap: str | None = None
    partitions: int = 4
    out: Path | None = None
    to_topic: str | None = None
    diff_against: str | None = None
    changes: Path | None = None
    checkpoint: Path | None = None
    live_prefix: str = "claimwatch."
    alerts: Path | None = None
    #: processes a replay may share its partitions among (see replay_parallel and
    #: replay_topic_parallel)
    jobs: int = 1


class Outputs:
    """Where replayed decisions go as they are made, holding only what is asked for.

    Every decision is written to the sink. The diff needs the last decision of each fact,
    and only its compared part; an output topic gets the decisions from a spool file once
    the replay is over; only the alert detectors (`--alerts`, which run in clock order over
    all partitions) need every decision kept.
    """

    def __init__(self, req: ReplayRequest, sink: IO[bytes]) -> None:
        self.sink = sink
        self.last: dict[str, dict[str, Any]] | None = {} if req.diff_against else None
        self.kept: list[dict[str, Any]] | None = [] if req.alerts is not None else None
        #: closed (and so deleted) when the replay process ends
        self.spool: IO[bytes] | None = (
            tempfile.TemporaryFile() if req.to_topic else None  # noqa: SIM115
        )

    def decided(self, record: dict[str, Any], body: bytes) -> None:
        """A decision just made: written out, and kept as far as asked."""
        self.sink.write(body + b"\n")
        self.seen(record, body)

    def decided_body(self, body: bytes) -> None:
        """A decision made in another process, as its JSON: parsed only if it is kept."""
        if self.last is None and self.kept is None:
            self.sink.write(body + b"\n")
            if self.spool is not None:
                self.spool.write(body + b"\n")
        else:
            self.decided(orjson.loads(body), body)

    def seen(self, record: dict[str, Any], body: bytes) -> None:
        """A decision made (now, or by the run a checkpoint resumes): kept as far as asked."""
        if self.last is not None:
            self.last[fact_key(record["subject"], record["field"])] = compared_part(record)
        if self.kept is not None:
            self.kept.append(record)
        if self.spool is not None:
            self.spool.write(body + b"\n")

    def spooled(self) -> Iterator[bytes]:
        """The decisions sent to the spool, in order."""
        if self.spool is None:
            return
        self.spool.seek(0)
        yield from (line.rstrip(b"\n") for line in self.spool)
