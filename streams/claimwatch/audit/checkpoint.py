"""A topic replay's checkpoint: the partitions done, and how much of the output they wrote.

A replay stopped part way resumes from it: the output is cut back to what the done
partitions wrote, their decisions are taken in again, and the other partitions are
replayed from their start.
"""

from __future__ import annotations

from typing import IO

import orjson

from claimwatch.audit.replay_request import Outputs, ReplayRequest


def load_checkpoint(req: ReplayRequest, outputs: Outputs) -> set[int]:
    """The partitions a checkpoint says are done; their decisions are taken in again."""
    if req.checkpoint is None or not req.checkpoint.exists():
        return set()
    saved = orjson.loads(req.checkpoint.read_bytes())
    outputs.sink.truncate(saved["out_bytes"])
    outputs.sink.seek(saved["out_bytes"])
    assert req.out is not None
    with req.out.open("rb") as handle:
        for line in handle:
            if line.strip():
                outputs.seen(orjson.loads(line), line.rstrip(b"\n"))
    return set(saved["done"])


def save_checkpoint(req: ReplayRequest, done: set[int], sink: IO[bytes]) -> None:
    """Note the partitions done and the output's length (nothing without `--checkpoint`)."""
    if req.checkpoint is None:
        return
    sink.flush()
    state = {"done": sorted(done), "out_bytes": sink.tell()}
    req.checkpoint.write_bytes(orjson.dumps(state))
