"""The Faust floor: a faust-streaming passthrough with the worker's settings and fan-out.

It consumes the claims backlog with one Faust agent (concurrency 1, at-least-once, commit
every second, acks=all) and, per claim, sends the same records per output topic and of the
same sizes as the worker did, through the same producer call the worker uses. No parsing,
no state, no decisions: what is left is the framework's own cost per record, the least a
Faust worker can spend. `python -m bench.faust_floor SPEC` (SPEC as the passthrough's).
It takes events in batches as the worker does; FLOOR_MODE=events makes it take them one by
one (`stream.events()`), to see what batching saves.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import faust

from streams.wire.kafka import env_bootstrap

#: events per batch (as the worker takes them)
BATCH = 500


def build(spec: dict[str, Any]) -> faust.App:
    """The Faust app of the floor: one agent over the input topic."""
    app = faust.App(
        spec["group"],
        broker=f"kafka://{env_bootstrap()}",
        store="memory://",
        datadir=str(Path(spec["ready"]).parent / spec["group"]),
        processing_guarantee="at_least_once",
        topic_replication_factor=1,
        broker_commit_interval=1.0,
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        stream_wait_empty=False,
        web_enabled=False,
    )
    source = app.topic(
        spec["input"],
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
    )
    plan = [(topic, float(rate), int(size)) for topic, rate, size in spec["outputs"]]
    ready = Path(spec["ready"])

    @app.agent(source, concurrency=1)
    async def forward(stream: faust.StreamT[bytes]) -> None:
        seen = 0
        batches = (
            stream.take_events(BATCH, within=0.01)
            if os.environ.get("FLOOR_MODE", "batch") == "batch"
            else _singles(stream)
        )
        async for events in batches:
            if not ready.exists():
                ready.touch()
            for event in events:
                message = event.message
                value = event.value or b""
                for topic, rate, size in plan:
                    for _ in range(int((seen + 1) * rate) - int(seen * rate)):
                        body = value + b" " * (size - len(value))
                        await app.producer.send(
                            topic, message.key, body, message.partition, None, None
                        )
                seen += 1

    return app


async def _singles(stream: Any) -> Any:
    async for event in stream.events():
        yield [event]


def main(spec: dict[str, Any]) -> None:
    """Run the floor until SIGTERM (as the worker runs: quiet, no spinner)."""
    from faust import Worker

    app = build(spec)
    logging.getLogger("faust").setLevel("WARNING")
    worker = Worker(app, loglevel="warning", quiet=True)
    worker.spinner = None
    worker.execute_from_commandline()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
