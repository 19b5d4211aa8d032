"""Replay of a JSON-lines claims file, in one process or shared out among several."""

from __future__ import annotations

from claimwatch.audit.progress import progress
from claimwatch.audit.replay import Replayed, Replayer
from claimwatch.audit.replay_parallel import jobs_for, replay_shared
from claimwatch.audit.replay_request import Outputs, ReplayRequest
from claimwatch.audit.shares import wants_parallel


def replay_file(req: ReplayRequest, outputs: Outputs) -> Replayed:
    """Replay a JSON-lines file, writing decisions as they are made.

    A large file and `req.jobs` > 1: its partitions are shared out among processes, and
    the decisions come out in the same order (`claimwatch.audit.replay_parallel`).
    """
    assert req.input is not None
    jobs = jobs_for(req.jobs, req.partitions)
    if wants_parallel(str(req.input), jobs):
        return replay_shared(req.input, req.policy, req.partitions, jobs, outputs.decided_body)
    replayer = Replayer(req.policy, req.partitions, keep=False)
    replayer.on_decision = outputs.decided
    advance, stop = progress(req.input.stat().st_size, str(req.input))
    try:
        with req.input.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                replayer.feed_line(raw, str(req.input), number)
                advance(len(raw))
    finally:
        stop()
    return replayer.finish()
