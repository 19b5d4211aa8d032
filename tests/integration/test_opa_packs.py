"""The policy packs as the gateway asks them: a real `opa run --server`, through `OpaCheck`.

The table is docs/policy-packs.md's (what each pack decides on the example inputs); the
failure paths are real too: nothing listening, a socket that never answers, a package
that is not loaded, a pack answering what is not a decision, an evaluation error. Each of
them is a `CheckFailed` naming it, so the check's argument is missing: never an allow.
No marker: like the other tests of a `make tools` service, it runs in `make test-unit`, and
without OPA it fails saying to run `make tools`.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.governance.checks import Argument, CallView, CheckEnv, CheckFailed, Phase
from claimwatch.gateway.governance.opa import OpaCheck
from claimwatch.gateway.governance.targets import Target
from mcp.types import CallToolResult, TextContent

from tests.support.gateway import free_port
from tests.support.opa import opa_server

NOTE = (
    "Patient Jane Roe, MRN 00482913, seen 2026-11-30 for E11.9. Contact: jane.roe@mail.example.net"
)
STATEMENT = "IBAN DE89 3704 0044 0532 0130 00, balance 1250.00 EUR"
EMAILS = "Write to alice@example.org or bob@example.org."
RESEARCH = {"purpose": "research", "requester": "dr.lee@irb.example.edu"}
MARKETING = {"purpose": "marketing", "requester": "analyst@ads.example.com"}
AUDIT = {"purpose": "audit", "requester": "auditor@finance.example.com"}


def result_call(tool: str, arguments: Mapping[str, Any], text: str) -> CallView:
    """The result phase of `tool` whose upstream answered one text block."""
    result = CallToolResult(content=[TextContent(type="text", text=text)])
    targets = (Target("/content/0/text", text),)
    return CallView(tool, "records", "result", arguments, result, targets)


def arguments_call(tool: str, arguments: Mapping[str, str]) -> CallView:
    """The arguments phase of `tool`: its string arguments are the texts."""
    phase: Phase = "arguments"
    targets = tuple(Target(f"/arguments/{k}", v) for k, v in arguments.items())
    return CallView(tool, "records", phase, arguments, None, targets)


CALLS = {
    "fetch_page": result_call("fetch_page", {"url": "https://example.org/contact"}, EMAILS),
    "read_record_research": result_call("read_record", {"patient_id": "P-17", **RESEARCH}, NOTE),
    "read_record_marketing": result_call("read_record", {"patient_id": "P-17", **MARKETING}, NOTE),
    "export_research": result_call(
        "export_statement", {"account_id": "A-9", **RESEARCH}, STATEMENT
    ),
    "export_audit": result_call("export_statement", {"account_id": "A-9", **AUDIT}, STATEMENT),
    "send_email_card": arguments_call(
        "send_email", {"to": "bob@example.org", "body": "card 4111 1111 1111 1111, exp 12/29"}
    ),
}
BASELINE = ("baseline_allow", "allow", 0.3)
# (call, pack) -> (kind, decision, strength): section 3.6 of the design, docs/policy-packs.md
TABLE = {
    ("fetch_page", "pii"): BASELINE,
    ("fetch_page", "research"): BASELINE,
    ("fetch_page", "financial"): BASELINE,
    ("read_record_research", "pii"): ("phi_detected", "deny", 0.9),
    ("read_record_research", "research"): ("research_authorized", "allow", 0.7),
    ("read_record_research", "financial"): BASELINE,
    ("read_record_marketing", "pii"): ("phi_detected", "deny", 0.9),
    ("read_record_marketing", "research"): BASELINE,
    ("read_record_marketing", "financial"): BASELINE,
    ("export_research", "pii"): BASELINE,
    ("export_research", "research"): ("research_authorized", "allow", 0.7),
    ("export_research", "financial"): ("financial_restricted", "deny", 0.8),
    ("export_audit", "pii"): BASELINE,
    ("export_audit", "research"): BASELINE,
    ("export_audit", "financial"): ("financial_masking", "modify", 0.6),
    ("send_email_card", "pii"): BASELINE,
    ("send_email_card", "research"): BASELINE,
    ("send_email_card", "financial"): BASELINE,
}
CLAIMS = {
    ("read_record_research", "pii"): "a medical record number together with a diagnosis code (PHI)",
    ("read_record_research", "research"): (
        "irb.example.edu is an authorized research requester, purpose research"
    ),
    ("export_research", "financial"): (
        "account statements leave the finance domain for audits only, not for research"
    ),
    ("export_audit", "financial"): "an audit export: account numbers are masked",
}


def env(url: str, timeout_s: float = 2.0) -> CheckEnv:
    return CheckEnv(GatewaySettings(), opa_url=url, opa_timeout_s=timeout_s, max_scan_bytes=1 << 20)


@asynccontextmanager
async def opa_check(
    url: str, raw: Mapping[str, Any], timeout_s: float = 2.0
) -> AsyncIterator[OpaCheck]:
    """An `opa` check built as the gateway builds it, closed at the end."""
    check = OpaCheck.from_config("opa_test", raw, ConfigSource("<test>"), env(url, timeout_s))
    try:
        yield check
    finally:
        await check.aclose()


async def ask(url: str, pack: str, call: CallView) -> Argument:
    async with opa_check(url, {"kind": "opa", "package": f"claimwatch.packs.{pack}"}) as check:
        return await check.argue(call)


@pytest.mark.parametrize(("call", "pack"), sorted(TABLE))
async def test_each_pack_decides_the_example_inputs_as_documented(
    opa_url: str, call: str, pack: str
) -> None:
    argument = await ask(opa_url, pack, CALLS[call])
    assert TABLE[call, pack] == (argument.kind, argument.decision, argument.strength)
    if (call, pack) in CLAIMS:
        assert CLAIMS[call, pack] == argument.claim
    if argument.decision != "modify":
        assert argument.mask.empty()


async def test_the_audit_mask_finds_the_iban_and_leaves_the_amount(opa_url: str) -> None:
    argument = await ask(opa_url, "financial", CALLS["export_audit"])
    assert [("IBAN",)] == [(p.label,) for p in argument.mask.patterns]
    assert ((), ()) == (argument.mask.spans, argument.mask.pointers)
    pattern = re.compile(argument.mask.patterns[0].pattern, re.ASCII)
    assert ["DE89 3704 0044 0532 0130 00"] == pattern.findall(STATEMENT)


async def test_a_rule_in_two_texts_is_found_across_them(opa_url: str) -> None:
    result = CallToolResult(content=[TextContent(type="text", text="MRN 00482913")])
    targets = (Target("/content/0/text", "MRN 00482913"), Target("/structured/dx", "E11.9"))
    call = CallView("read_record", "records", "result", {}, result, targets)
    assert "phi_detected" == (await ask(opa_url, "pii", call)).kind


async def test_nothing_listening_is_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CheckFailed) as failed:
        await ask(url, "pii", CALLS["fetch_page"])
    assert str(failed.value).startswith(f"OPA at {url} is unreachable: ConnectionRefusedError")


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose socket accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


async def test_a_server_that_never_answers_times_out(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    raw = {"kind": "opa", "package": "claimwatch.packs.pii", "timeout": "300ms"}
    started = time.monotonic()
    with pytest.raises(CheckFailed) as failed:
        async with opa_check(url, raw) as check:
            assert 0.3 == check.timeout_s
            await check.argue(CALLS["fetch_page"])
    elapsed = time.monotonic() - started
    assert f"OPA at {url} gave no answer within 300 ms" == str(failed.value)
    assert 0.3 <= elapsed < 2.0


async def test_a_package_that_is_not_loaded_is_undefined(opa_url: str) -> None:
    with pytest.raises(CheckFailed) as failed:
        await ask(opa_url, "nope", CALLS["fetch_page"])
    assert "undefined: no claimwatch/packs/nope/decision (is the pack loaded?)" == str(failed.value)


BAD_PACK = """package claimwatch.packs.bad

maybe := {"decision": "maybe", "kind": "x", "claim": "", "strength": 0.5}

too_strong := {"decision": "allow", "kind": "x", "claim": "", "strength": 1.5}

no_kind := {"decision": "allow", "kind": "", "claim": "", "strength": 0.5}

no_claim := {"decision": "allow", "kind": "x", "strength": 0.5}

bad_pattern := {
	"decision": "modify", "kind": "x", "claim": "", "strength": 0.5,
	"mask": [{"pattern": "(", "label": "X"}],
}

extra := {"decision": "allow", "kind": "x", "claim": "", "strength": 0.5, "why": "?"}

a_string := "allow"

conflict := 1 if input.tool
conflict := 2 if input.tool
"""
BAD_ANSWERS = {
    "maybe": "decision: Input should be 'allow', 'deny' or 'modify'",
    "too_strong": "strength: Input should be less than or equal to 1",
    "no_kind": "kind: String should have at least 1 character",
    "no_claim": "claim: Field required",
    "bad_pattern": (
        "mask.0.pattern: '(' does not compile: missing ), unterminated subpattern at position 0"
    ),
    "extra": "why: Extra inputs are not permitted",
    "a_string": (
        "an object with decision, kind, claim and strength was expected, OPA gave str 'allow'"
    ),
}


@pytest.fixture(scope="module")
def bad_opa_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second OPA serving only a pack whose rules answer what is not a decision."""
    packs: Path = tmp_path_factory.mktemp("bad-packs")
    (packs / "bad.rego").write_text(BAD_PACK)
    with opa_server(packs) as url:
        yield url


@pytest.mark.parametrize("rule", sorted(BAD_ANSWERS))
async def test_an_answer_that_is_no_decision_fails_the_check(bad_opa_url: str, rule: str) -> None:
    raw = {"kind": "opa", "package": "claimwatch.packs.bad", "rule": rule}
    with pytest.raises(CheckFailed) as failed:
        async with opa_check(bad_opa_url, raw) as check:
            await check.argue(CALLS["fetch_page"])
    expected = f"claimwatch/packs/bad/{rule} is not a decision: {BAD_ANSWERS[rule]}"
    assert expected == str(failed.value)


async def test_an_evaluation_error_is_opa_s_status_and_message(bad_opa_url: str) -> None:
    raw = {"kind": "opa", "package": "claimwatch.packs.bad", "rule": "conflict"}
    with pytest.raises(CheckFailed) as failed:
        async with opa_check(bad_opa_url, raw) as check:
            await check.argue(CALLS["fetch_page"])
    expected = (
        "OPA 500: internal_error: error(s) occurred while evaluating query; "
        "eval_conflict_error: rule data.claimwatch.packs.bad.conflict produced conflicting "
        "values: 1 at "
    )
    assert expected == str(failed.value)[: len(expected)]
    assert "bad.rego:" in str(failed.value)


async def test_the_session_is_opened_once_and_closed(opa_url: str) -> None:
    async with opa_check(opa_url, {"kind": "opa", "package": "claimwatch.packs.pii"}) as check:
        for _ in range(3):
            await check.argue(CALLS["fetch_page"])
        session = check.client._session
        assert session is not None
    assert session.closed
    assert check.client._session is None
