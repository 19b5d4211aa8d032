"""The Faust floor: a faust-streaming passthrough with the worker's settings and fan-out.

It consumes the claims backlog with one Faust agent (concurrency 1, at-least-once, commit
every second, acks=all) and, per claim, sends the same records per output topic and of the
same sizes as the worker did, through the same producer call the worker uses. No parsing,
no state, no decisions: what is left is the framework's own cost per record, the least a
Faust worker can spend. `python -m bench.faust_floor SPEC` (SPEC as the passthrough's).
It takes events in batches as the worker does; FLOOR_MODE=events makes it take them one by
one (`stream.events()`), to see what batching saves.

With `"tables": true` in SPEC the outputs the worker writes through tables (the facts
changelog and the resolutions topic, its table's changelog) go through Faust tables here
too, on the worker's default store: the floor of a Faust worker that keeps state. With
`"tables": "direct"` they are written as the worker writes them (`DirectTable`: the store,
then one send per change, its offset persisted on delivery).

With `"decider": "plain"` every claim is also decided by the streaming baseline of
`bench.plain_stream` (stdlib json, one dict per fact, decided again per claim): the floor of
a Faust worker that decides, written plainly. It sends its own records where the worker
sends records of the same kind (decisions, resolutions, the facts changelog), at the
worker's rates per claim, so their sizes grow with a fact's live claims as the worker's do
(a decision lists every live claim); the other topics get the claim padded to the worker's
mean size there, as in every other mode.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import faust
from claimwatch.wire.kafka import env_bootstrap
from claimwatch.worker.app import raw_table, raw_topic
from claimwatch.worker.batching import batched_events
from claimwatch.worker.changelog import Delivery, DirectTable
from claimwatch.worker.loop import DEFAULT_LOOP, install_loop
from claimwatch.worker.settings import DEFAULT_STORE
from claimwatch.worker.store import FLUSH_EVERY_S, register, store_url
from claimwatch.worker.timers import install_store_flush
from claimwatch.worker.transport import broker_url
from claimwatch.worker.transport import register as register_transport

from bench import plain_resolve
from bench.plain_stream import PlainStream
from bench.workload import POLICY

#: events per batch (as the worker takes them)
BATCH = 500
#: partitions of every topic (as the benchmark creates them)
PARTITIONS = 4


def build(spec: dict[str, Any]) -> faust.App:
    """The Faust app of the floor: one agent over the input topic."""
    register()
    register_transport()
    tabled = bool(spec.get("tables"))
    direct = spec.get("tables") == "direct"
    app = faust.App(
        spec["group"],
        broker=broker_url(env_bootstrap()),  # the worker's transport
        # without tables the store holds nothing: the plain floor names memory:// so that
        # it opens no rocksdb files; with tables it runs on the worker's default store
        store=store_url(DEFAULT_STORE) if tabled else "memory://",
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
    tables = {
        topic: DirectTable(_table(app, topic), direct=direct)
        for topic, _, _ in plan
        if tabled and _stateful(topic)
    }

    if tabled:  # the worker's default store, flushed as the worker flushes it
        install_store_flush(app, FLUSH_EVERY_S)
    ready = Path(spec["ready"])
    decider = (
        PlainStream(plain_resolve.compile_policy(str(POLICY)), PARTITIONS)
        if spec.get("decider") == "plain"
        else None
    )

    #: the decider's last decision line per fact key (a claim that leaves its decision
    #: unchanged makes none; the worker's resolution is then the one it holds)
    last: dict[bytes, bytes] = {}

    @app.agent(source, concurrency=1)
    async def forward(stream: faust.StreamT[bytes]) -> None:
        seen = 0
        most = BATCH if os.environ.get("FLOOR_MODE", "batch") == "batch" else 1
        # the worker's own loop: batches, each event made current (tables write through it)
        async for event in batched_events(stream, most, 0.01):
            if not ready.exists():
                ready.touch()
            message = event.message
            value = event.value or b""
            made = decider.handle(value, message.partition) if decider is not None else None
            for topic, rate, size in plan:
                for _ in range(int((seen + 1) * rate) - int(seen * rate)):
                    body = _body(topic, value, size, made, message.key, last)
                    table = tables.get(topic)
                    if table is not None:
                        table[message.key] = body
                        await table.send_changes(app.producer, _untracked)
                    else:
                        await app.producer.send(
                            topic, message.key, body, message.partition, None, None
                        )
            seen += 1

    return app


def _body(
    topic: str,
    value: bytes,
    size: int,
    made: list[bytes] | None,
    key: bytes,
    last: dict[bytes, bytes],
) -> bytes:
    """What the floor sends to `topic` for one claim (`made`: the decider's records of it).

    The decider's decision goes to the decisions and resolutions topics, its serialized
    claims of the fact to the facts changelog; anything else is the claim padded to the
    worker's mean size on that topic.
    """
    role = topic.rpartition(".pt.")[2]  # the plan names topics `<prefix>pt.<role>`
    if made:  # (none for a redelivery, which the worker writes again as it was)
        if role == "facts-changelog":
            return made[-1]
        if role in ("decisions", "resolutions"):
            if len(made) > 1:
                last[key] = made[0]
            return last.get(key, made[-1])
    return value + b" " * (size - len(value))


async def _untracked(delivery: Delivery) -> None:
    """The floor keeps no bound on records in flight (the passthroughs do not either)."""


def _stateful(topic: str) -> bool:
    """Whether the worker writes this output through a table (its changelog)."""
    return topic.endswith(("facts-changelog", "resolutions"))


def _table(app: faust.App, topic: str) -> Any:
    """A bytes table whose changelog is `topic`, declared as the worker declares its tables."""
    changelog = raw_topic(app, topic, partitions=PARTITIONS, compacting=True)
    return raw_table(app, topic.rsplit(".", 1)[-1].replace("-", "_"), changelog, PARTITIONS)


def main(spec: dict[str, Any]) -> None:
    """Run the floor until SIGTERM (as the worker runs: quiet, no spinner)."""
    from faust import Worker

    install_loop(DEFAULT_LOOP)  # the worker's event loop: the same settings as the worker
    app = build(spec)
    logging.getLogger("faust").setLevel("WARNING")
    worker = Worker(app, loglevel="warning", quiet=True)
    worker.spinner = None
    worker.execute_from_commandline()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
