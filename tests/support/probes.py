"""Claims published to a running worker to see that it still decides them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.support.kafka import Record, TopicReader, WorkerProcess, fact_key, publish_claims


async def publish_until_decided(
    bootstrap: str,
    worker: WorkerProcess,
    claims: Sequence[Mapping[str, Any]],
    what: str,
    timeout: float = 60.0,
) -> list[Record]:
    """Publish `claims`, then read the decisions topic until each of their facts has one.

    Returns the decision records read; fails naming `what` when one is missing at `timeout`.
    """
    await publish_claims(bootstrap, worker.prefix, claims)
    wanted = {fact_key(c) for c in claims}

    def decided(records: list[Record]) -> bool:
        return wanted <= {fact_key(r.json()) for r in records}

    async with TopicReader(bootstrap, worker.names.decisions) as decisions:
        return await decisions.wait_for(decided, timeout, what)
