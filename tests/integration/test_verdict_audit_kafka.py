"""Explain and replay of verdicts on the real broker, with a worker as shipped.

The gateway's governance stage sends one signal per check to `<prefix>verdicts` (shaped as
`tests.support.governance_examples.gateway_signals`); the worker decides each request and writes the
verdict to `<prefix>verdicts.decisions`. `claimwatch explain vrd_...` renders a recorded
verdict; `claimwatch replay --verdicts` re-decides the topic: under the worker's policy it
reproduces every recorded verdict, and under a policy without the rule that lets an
authorized research requester defeat the PHI block, that request is denied instead.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from claimwatch.audit.explain_verdict import explain_verdict

from tests.support.cli import run_cli
from tests.support.governance_examples import (
    EXAMPLES,
    GOVERNANCE_POLICY,
    gateway_signals,
    without_research_rule,
)
from tests.support.kafka import (
    TopicReader,
    WorkerProcess,
    Workers,
    publish_raw,
    unique,
    write_policy,
)

pytest_plugins = ["tests.support.kafka"]
pytestmark = pytest.mark.kafka

#: The policy's timeout is 2 s: the request missing a check is decided after it, on a tick.
WITHIN_S: Final = 60.0


async def send_requests(worker: WorkerProcess) -> dict[str, str]:
    """Every example request's signals, as the gateway sends them; name -> request id."""
    run = unique("gw")
    ids = {name: f"{run}-{name}-result" for name in EXAMPLES}
    at = time.time_ns() // 1000
    messages = [
        (ids[name].encode(), orjson.dumps(signal))
        for name in EXAMPLES
        for signal in gateway_signals(name, ids[name], at)
    ]
    await publish_raw(worker.bootstrap, worker.names.verdicts, messages)
    return ids


async def recorded(worker: WorkerProcess, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The worker's verdict of each request, by request id (the first of any repeats)."""
    wanted = set(ids.values())

    def by_request(records: list[Any]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for record in records:
            decided = record.json()
            if decided["request_id"] in wanted:
                found.setdefault(decided["request_id"], decided)
        return found

    async with TopicReader(worker.bootstrap, worker.names.verdicts_decisions) as reader:
        await reader.wait_for(lambda rs: wanted <= set(by_request(rs)), WITHIN_S, "verdicts")
        return by_request(reader.records)


def replay(worker: WorkerProcess, policy: Path, out: Path) -> dict[str, dict[str, Any]]:
    """`claimwatch replay --verdicts --from-beginning` of the worker's topic: by request id."""
    done = run_cli(
        "replay",
        "--verdicts",
        "--from-beginning",
        "--policy",
        str(policy),
        "--bootstrap",
        worker.bootstrap,
        "--topic-prefix",
        worker.prefix,
        "--out",
        str(out),
    )
    assert 0 == done.returncode, done.stderr.decode()
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return {r["request_id"]: r for r in records}


async def test_verdicts_are_explained_and_replayed(workers: Workers, tmp_path: Path) -> None:
    worker = await workers.launch(GOVERNANCE_POLICY)
    ids = await send_requests(worker)
    live = await recorded(worker, ids)

    # the worker decided each example as the design's table says
    by_name = {name: live[rid] for name, rid in ids.items()}
    assert {
        name: (e.decision, e.accepted, e.reason, e.missing, bool(e.missing))
        for name, e in EXAMPLES.items()
    } == {
        name: (r["decision"], r["accepted"], r["reason"], r["missing_checks"], r["timed_out"])
        for name, r in by_name.items()
    }

    # explain: a vrd_ id without --from is read from <prefix>verdicts.decisions
    research = live[ids["research"]]
    shown = await asyncio.to_thread(
        run_cli,
        "explain",
        research["decision_id"],
        "--bootstrap",
        worker.bootstrap,
        "--topic-prefix",
        worker.prefix,
    )
    assert 0 == shown.returncode, shown.stderr.decode()
    assert explain_verdict(research) + "\n" == shown.stdout.decode()
    assert "opa_research undercuts opa_pii" in shown.stdout.decode()

    # replay under the worker's policy: the same verdicts, decision ids included
    same = await asyncio.to_thread(replay, worker, GOVERNANCE_POLICY, tmp_path / "same.jsonl")
    assert {rid: live[rid] for rid in ids.values()} == {rid: same[rid] for rid in ids.values()}

    # replay under the policy without `research_authorized undercut phi_detected`
    text = without_research_rule().replace(
        "policy_version: governance-demo-1", "policy_version: governance-demo-1-norule"
    )
    norule = write_policy(tmp_path, text, "norule.yaml")
    changed = await asyncio.to_thread(replay, worker, norule, tmp_path / "norule.jsonl")
    assert {
        name: ("deny" if name == "research" else live[rid]["decision"]) for name, rid in ids.items()
    } == {name: changed[rid]["decision"] for name, rid in ids.items()}
    denied = changed[ids["research"]]
    assert (["opa_pii", "opa_research", "pii"], []) == (
        denied["accepted"],
        denied["attacks"],
    )
    assert denied["decision_id"] != research["decision_id"]


async def test_explaining_an_unknown_verdict_names_the_topic(
    workers: Workers, tmp_path: Path
) -> None:
    worker = await workers.launch(GOVERNANCE_POLICY)
    started = time.monotonic()
    shown = await asyncio.to_thread(
        run_cli,
        "explain",
        "vrd_00000000000000000000000000000000",
        "--bootstrap",
        worker.bootstrap,
        "--topic-prefix",
        worker.prefix,
    )
    assert 1 == shown.returncode
    assert (
        f"no decision vrd_00000000000000000000000000000000 in {worker.names.verdicts_decisions}"
    ) in shown.stderr.decode()
    assert time.monotonic() - started < WITHIN_S
