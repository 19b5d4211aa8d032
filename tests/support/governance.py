"""Builders for the governance end-to-end tests: the example's gateway file, trust, verdicts.

They run the shipped files of examples/governance (`governed_gateway`, and the policy
`tests.support.governance_examples.GOVERNANCE_POLICY`); the example requests and what the
policy decides are in `tests.support.governance_examples`, the fake checks in
`tests.support.checks`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml
from claimwatch.client.facts import FactPages
from claimwatch.wire.topics import BrokerUnavailable, TopicNames

from tests.support.claims import envelope
from tests.support.gateway import stdio_server
from tests.support.governance_examples import GOVERNANCE_POLICY
from tests.support.kafka import TopicReader, publish_claims

EXAMPLE: Final = GOVERNANCE_POLICY.parent
EXAMPLE_GATEWAY: Final = EXAMPLE / "gateway.yaml"
#: The example upstream, as the example's gateway file runs it.
SERVER_COMMAND: Final = ["python", str(EXAMPLE / "server.py")]

# ---------------------------------------------------------------------------- end to end


def governed_gateway(
    path: Path,
    *,
    opa_url: str,
    worker_url: str,
    bootstrap: str,
    prefix: str,
    policy: Path = GOVERNANCE_POLICY,
    tools: Mapping[str, Any] | None = None,
) -> Path:
    """The example's gateway file, its server run from the repository, pointed at this run.

    `tools` are added to (or replace) the example's; everything else is the example's.
    """
    document = yaml.safe_load(EXAMPLE_GATEWAY.read_text(encoding="utf-8"))
    document.update(worker_url=worker_url, bootstrap=bootstrap, topic_prefix=prefix)
    document["servers"] = {"records": stdio_server(SERVER_COMMAND)}
    document["governance"]["policy"] = str(policy)
    document["governance"]["opa"]["url"] = opa_url
    document["tools"] = {**document["tools"], **(tools or {})}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


async def publish_trust(
    bootstrap: str,
    prefix: str,
    worker_url: str,
    facts: Mapping[str, str],
    *,
    source: str = "security-team",
    within: float = 30.0,
) -> None:
    """Claim `trust` of each subject from `source`; return once the worker has resolved each."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    claims = [
        envelope(
            f"trust-{subject}-{value}",
            source,
            value,
            subject=subject,
            field="trust",
            observed_at=now,
        )
        for subject, value in facts.items()
    ]
    await publish_claims(bootstrap, prefix, claims)
    deadline = time.monotonic() + within
    pending = dict(facts)
    async with FactPages(worker_url) as pages:
        while pending:
            for subject, value in list(pending.items()):
                answer = await pages.ask(subject, "trust")
                if answer.status == 200 and (answer.decision or {}).get("value") == value:
                    del pending[subject]
            if pending and time.monotonic() > deadline:
                raise AssertionError(f"trust facts not resolved within {within:.0f}s: {pending}")
            await asyncio.sleep(0.3)


async def recorded_verdict(
    bootstrap: str, names: TopicNames, request_id: str, within: float = 15.0
) -> dict[str, Any]:
    """The worker's decision of `request_id` on `<prefix>verdicts.decisions`."""
    async with TopicReader(bootstrap, names.verdicts_decisions) as reader:
        records = await reader.wait_for(
            lambda rs: any(r.key == request_id.encode() for r in rs),
            within,
            f"the decision of {request_id}",
        )
    found: dict[str, Any] = next(r.json() for r in records if r.key == request_id.encode())
    return found


class FakePublisher:
    """The verdict publisher as the recorder sees it: takes every record, or is down."""

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.sent: list[tuple[bytes, bytes]] = []

    async def __aenter__(self) -> FakePublisher:
        if self.down:
            raise BrokerUnavailable("no Kafka broker answered at 127.0.0.1:1")
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def send_record(self, key: bytes, value: bytes) -> None:
        self.sent.append((key, value))
