"""Governance on `claimwatch gateway` end to end: an agent, the gateway, OPA, a real worker.

The agent is the SDK's client over stdio (`tests.support.gateway.agent`); the gateway is
the installed `claimwatch gateway` on the example's file (examples/governance/gateway.yaml,
its server, worker, prefix and OPA pointed at this run); the upstream is the example's
server; OPA is the real server on the example's packs (`tests/support/opa.py`); the worker
runs as the README starts it on the example's policy, with two trust facts decided:
example.org is trusted and mail.example.net untrusted (from security-team).

Every call's verdict is also read back from `<prefix>verdicts.decisions`, where the worker
decided the gateway's signals: the same decision id, decision, accepted arguments and
attacks as the note the agent got.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claimwatch.wire.topics import TopicNames
from mcp.types import CallToolResult

from tests.support.cli import CLAIMWATCH, run_cli
from tests.support.gateway import agent, free_port, text_of, wire
from tests.support.governance import (
    governed_gateway,
    publish_trust,
    recorded_verdict,
)
from tests.support.governance_examples import GOVERNANCE_POLICY
from tests.support.kafka import TopicReader, WorkerProcess, Workers, wait_for_ticks
from tests.support.mcp_clients import inspector_cli

pytest_plugins = ["tests.support.kafka"]
pytestmark = [pytest.mark.kafka]

RESEARCH = {"patient_id": "P-17", "purpose": "research", "requester": "dr.lee@irb.example.edu"}
MARKETING = {"patient_id": "P-17", "purpose": "marketing", "requester": "analyst@ads.example.com"}


@pytest.fixture(scope="module")
def worker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """A worker on the example's policy with the two trust facts decided, for the module."""
    started: list[WorkerProcess] = []
    workers = Workers(kafka_bootstrap, tmp_path_factory.mktemp("governance"), started)

    async def up() -> WorkerProcess:
        launched = await workers.launch(GOVERNANCE_POLICY)
        await wait_for_ticks(launched.bootstrap, launched.prefix)
        await publish_trust(
            launched.bootstrap,
            launched.prefix,
            launched.url,
            {"domain:example.org": "trusted", "domain:mail.example.net": "untrusted"},
        )
        return launched

    try:
        yield asyncio.run(up())
    finally:
        workers.stop_all()


def gateway_file(
    tmp_path: Path, worker: WorkerProcess, opa_url: str, **tools: dict[str, Any]
) -> Path:
    return governed_gateway(
        tmp_path / "gateway.yaml",
        opa_url=opa_url,
        worker_url=worker.url,
        bootstrap=worker.bootstrap,
        prefix=worker.prefix,
        tools=tools,
    )


def note(result: CallToolResult, phase: str = "result") -> dict[str, Any]:
    """The governance note of one phase of a result."""
    assert result.structured_content is not None, wire(result)
    found: dict[str, Any] = result.structured_content["claimwatch"]["governance"][phase]
    return found


def labels(found: dict[str, Any]) -> dict[str, str]:
    return {a["id"]: a["label"] for a in found["arguments"]}


def attacks(found: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((a["attacker"], a["attacked"], a["type"]) for a in found["attacks"])


async def assert_recorded(worker: WorkerProcess, found: dict[str, Any]) -> dict[str, Any]:
    """The worker's record of the note's request: the same verdict as the gateway's."""
    record = await recorded_verdict(
        worker.bootstrap, TopicNames(worker.prefix), found["request_id"]
    )
    assert (
        found["decision_id"],
        found["decision"],
        found["accepted"],
        found["missing_checks"],
        [dict(a) for a in found["attacks"]],
        labels(found),
    ) == (
        record["decision_id"],
        record["decision"],
        record["accepted"],
        record["missing_checks"],
        record["attacks"],
        {a["id"]: a["label"] for a in record["arguments"]},
    )
    assert "sent" == found["recorded"]
    return record


async def call(config: Path, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async with agent("stdio", config) as client:
        return await client.call_tool(tool, arguments)


async def test_two_emails_from_a_trusted_domain_pass_unmodified(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    result = await call(config, "fetch_page", {"url": "https://example.org/contact"})
    found = note(result)
    assert not result.is_error
    assert "Write to alice@example.org or bob@example.org." == text_of(result).splitlines()[0]
    assert ("allow", "passed", ["opa_pii", "trust_domain"]) == (
        found["decision"],
        found["applied"],
        found["accepted"],
    )
    assert [("pii", "opa_pii", "undercut"), ("trust_domain", "pii", "undermine")] == attacks(found)
    assert "out" == labels(found)["pii"]
    await assert_recorded(worker, found)


async def test_two_emails_from_an_untrusted_domain_are_masked(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    result = await call(config, "fetch_page", {"url": "https://mail.example.net/contact"})
    found = note(result)
    assert not result.is_error
    assert "Write to [EMAIL] or [EMAIL]." == text_of(result).splitlines()[0]
    assert ("modify", "masked", True) == (found["decision"], found["applied"], found["tie"])
    in_text = [(m["label"], m["by"]) for m in found["masked"] if m["pointer"] == "/content/0/text"]
    assert [("EMAIL", "pii")] * 2 == in_text  # and the same in the structured copy of the text
    assert {("EMAIL", "pii")} == {(m["label"], m["by"]) for m in found["masked"]}
    assert "mail.example.net" not in json.dumps(wire(result)).replace("domain:mail.example.net", "")
    await assert_recorded(worker, found)


async def test_phi_deny_against_research_allow_is_decided_by_the_attack_rules(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    research = await call(config, "read_record", RESEARCH)
    found = note(research)
    assert not research.is_error
    assert "modify" == found["decision"]
    assert ("opa_research", "opa_pii", "undercut") in attacks(found)
    assert "out" == labels(found)["opa_pii"]
    text = text_of(research).splitlines()[0]
    assert "MRN 00482913" in text
    assert "Contact: [EMAIL]" in text
    await assert_recorded(worker, found)

    marketing = await call(config, "read_record", MARKETING)
    denied = note(marketing)
    assert marketing.is_error
    assert ("deny", "denied", "in") == (
        denied["decision"],
        denied["applied"],
        labels(denied)["opa_pii"],
    )
    assert "phi_detected" in text_of(marketing)
    assert "00482913" not in json.dumps(wire(marketing))
    await assert_recorded(worker, denied)


async def test_empty_grounded_extension_is_denied_and_escalated(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    result = await call(config, "export_statement", {"account_id": "A-1", **RESEARCH})
    found = note(result)
    assert result.is_error
    assert ("undecided", "escalate", "escalated_denied", [[]]) == (
        found["decision"],
        found["action"],
        found["applied"],
        found["extensions"],
    )
    assert {"opa_financial": "undec", "opa_research": "undec"} == labels(found)
    assert "DE89" not in json.dumps(wire(result))
    await assert_recorded(worker, found)


async def test_audit_export_is_masked_by_the_pack_named_pattern(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    arguments = {"account_id": "A-1", "purpose": "audit", "requester": "auditor@audit.example"}
    result = await call(config, "export_statement", arguments)
    found = note(result)
    assert not result.is_error
    text = text_of(result).splitlines()[0]
    assert ("[IBAN]" in text, "1250.00 EUR" in text, "DE89" in text) == (True, True, False)
    assert ("modify", {"opa_financial"}) == (found["decision"], {m["by"] for m in found["masked"]})
    await assert_recorded(worker, found)


async def test_arguments_are_masked_before_they_are_forwarded(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    result = await call(
        config, "send_email", {"to": "ops@example.org", "body": "card 4111 1111 1111 1111"}
    )
    found = note(result, "arguments")
    assert not result.is_error
    body = (result.structured_content or {})["body"]  # what the upstream received
    assert "[CARD]" in body
    assert re.search(r"4111|1111", body) is None
    assert ("modify", "masked") == (found["decision"], found["applied"])
    await assert_recorded(worker, found)


async def test_critical_pii_in_arguments_is_never_forwarded(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, opa_url)
    async with agent("stdio", config) as client:
        result = await client.call_tool(
            "send_email", {"to": "ops@example.org", "body": "SSN 123-45-6789"}
        )
        outbox = await client.call_tool("outbox", {})
    found = note(result, "arguments")
    assert result.is_error
    assert ("deny", "denied") == (found["decision"], found["applied"])
    assert {"messages": []} == outbox.structured_content
    await assert_recorded(worker, found)


async def test_opa_down_the_argument_is_missing_and_the_call_denied(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    config = gateway_file(tmp_path, worker, f"http://127.0.0.1:{free_port()}")
    result = await call(config, "fetch_page", {"url": "https://example.org/contact"})
    found = note(result)
    opa = next(c for c in found["checks"] if c["name"] == "opa_pii")
    assert result.is_error
    assert "failed" == opa["status"]
    assert "unreachable" in opa["error"]
    assert ("undecided", ["opa_pii"], True) == (
        found["decision"],
        found["missing_checks"],
        found["timed_out"],
    )
    assert "alice@example.org" not in json.dumps(wire(result))
    record = await assert_recorded(worker, found)
    assert (True, ["opa_pii"]) == (record["timed_out"], record["missing_checks"])


async def test_unscannable_content_is_blocked(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    """The only check fails, so no signal exists to send: the worker never hears of it."""
    config = gateway_file(
        tmp_path, worker, opa_url, picture={"checks": {"result": "outbound_message"}}
    )
    result = await call(config, "picture", {})
    found = note(result)
    assert result.is_error
    assert ("undecided", "escalated_denied", ["pii"], "none") == (
        found["decision"],
        found["applied"],
        found["missing_checks"],
        found["recorded"],
    )
    assert "/content/0" in next(c["error"] for c in found["checks"] if c["name"] == "pii")
    # the gateway answers once the broker took its signals: none of them can come later
    async with TopicReader(worker.bootstrap, TopicNames(worker.prefix).verdicts) as reader:
        signals = await reader.to_end()  # ticks keep coming: the topic never goes idle
    assert [] == [r for r in signals if r.key == found["request_id"].encode()]


def test_a_client_nobody_here_wrote_gets_the_masked_result_and_the_denial(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    """The MCP Inspector's CLI through the governed gateway: masked, then denied (exit 5)."""
    config = gateway_file(tmp_path, worker, opa_url)
    server = [str(CLAIMWATCH), "gateway", "--config", str(config)]
    masked = inspector_cli(
        server,
        "tools/call",
        "--tool-name",
        "fetch_page",
        "--tool-arg",
        "url=https://mail.example.net/contact",
        tmp_home=tmp_path,
    ).result["result"]
    denied_run = inspector_cli(
        server,
        "tools/call",
        "--tool-name",
        "send_email",
        "--tool-arg",
        "to=ops@example.org",
        "--tool-arg",
        "body=SSN 123-45-6789",
        tmp_home=tmp_path,
    )
    texts = [b["text"] for b in masked["content"] if "text" == b["type"]]
    assert (False, "Write to [EMAIL] or [EMAIL].") == (masked["isError"], texts[0])
    assert "masked" == masked["structuredContent"]["claimwatch"]["governance"]["result"]["applied"]
    denied = denied_run.result["result"]
    assert (5, True) == (denied_run.returncode, denied["isError"])
    note_ = denied["structuredContent"]["claimwatch"]["governance"]["arguments"]
    assert ("deny", "denied") == (note_["decision"], note_["applied"])


async def test_the_gateways_verdict_is_explained_and_replayed(
    worker: WorkerProcess, opa_url: str, tmp_path: Path
) -> None:
    """`claimwatch explain vrd_...` and `replay --verdicts` read what the gateway decided."""
    config = gateway_file(tmp_path, worker, opa_url)
    found = note(await call(config, "read_record", RESEARCH))
    await assert_recorded(worker, found)
    where = ("--bootstrap", worker.bootstrap, "--topic-prefix", worker.prefix)
    shown = await asyncio.to_thread(run_cli, "explain", found["decision_id"], *where)
    assert 0 == shown.returncode, shown.stderr.decode()
    assert f"verdict {found['decision_id']} on {found['request_id']}" in shown.stdout.decode()
    assert "opa_research undercuts opa_pii" in shown.stdout.decode()
    out = tmp_path / "verdicts.jsonl"
    replayed = await asyncio.to_thread(
        run_cli, "replay", "--verdicts", "--from-beginning", "--policy", str(GOVERNANCE_POLICY),
        "--out", str(out), *where,
    )  # fmt: skip
    assert 0 == replayed.returncode, replayed.stderr.decode()
    by_request = {r["request_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    again = by_request[found["request_id"]]
    assert (found["decision_id"], found["decision"], found["accepted"]) == (
        again["decision_id"],
        again["decision"],
        again["accepted"],
    )
