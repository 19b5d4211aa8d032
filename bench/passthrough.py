"""The aiokafka passthrough the worker is measured against: `python -m bench.passthrough SPEC`."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

from claimwatch.wire.kafka import env_bootstrap
from claimwatch.worker.loop import DEFAULT_LOOP, install_loop

from bench.kafka_io import new_producer


async def passthrough(spec: dict[str, Any]) -> None:
    """Consume the input in a group; per record, send the planned outputs; commit every 1 s.

    At-least-once as the worker: a timer task (like Faust's commit timer) takes the offsets
    consumed so far, flushes the producer (acks=all) and only then commits them. Each output
    is the input value padded with spaces to the worker's mean size for that topic (still
    the claim's JSON).
    """
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        spec["input"],
        bootstrap_servers=env_bootstrap(),
        group_id=spec["group"],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    out = new_producer()
    plan = [(topic, float(rate), int(size)) for topic, rate, size in spec["outputs"]]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await out.start()
    await consumer.start()
    pending: dict[Any, int] = {}

    async def commit() -> None:
        taken = dict(pending)
        pending.clear()
        if taken:
            await out.flush()
            await consumer.commit(taken)

    async def commit_every_second() -> None:
        while not stop.is_set():
            await asyncio.sleep(1.0)
            await commit()

    committer = asyncio.create_task(commit_every_second())
    ready = Path(spec["ready"])
    seen = 0
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            if not ready.exists() and consumer.assignment():
                ready.touch()
            for tp, messages in batches.items():
                for message in messages:
                    value = message.value or b""
                    for topic, rate, size in plan:
                        for _ in range(int((seen + 1) * rate) - int(seen * rate)):
                            body = value + b" " * (size - len(value))
                            await out.send(
                                topic, body, key=message.key, partition=message.partition
                            )
                    seen += 1
                if messages:
                    pending[tp] = messages[-1].offset + 1
        committer.cancel()
        await commit()
    finally:
        await consumer.stop()
        await out.stop()


if __name__ == "__main__":
    install_loop(DEFAULT_LOOP)  # the worker's event loop: the same settings on every side
    asyncio.run(passthrough(json.loads(sys.argv[1])))
