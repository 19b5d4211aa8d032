"""The MCP adapter's mapping from `CallToolResult` to claims, without a server process."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from claimwatch.client.mcp_adapter import (
    MappingError,
    ToolMapping,
    call_tool_claim,
    claim_from_result,
    load_mappings,
    parse_mappings,
)
from claimwatch.core.signing import verify
from claimwatch.models.claim import ClaimEnvelope
from mcp import Client
from mcp.types import CallToolResult, ImageContent, TextContent

from tests.support.paths import REPO

EXAMPLE = REPO / "examples" / "mcp"
NOW = "2026-09-14T09:12:00Z"
MAPPING = ToolMapping(
    subject="invoice:{invoice_id}",
    field="payment_status",
    value="status",
    source="billing-api",
    lineage="ledger",
    authority="system_of_record",
    observed_at="as_of",
)
ARGS = {"invoice_id": "INV-1"}


def text(*parts: str) -> list[TextContent]:
    """Text content blocks."""
    return [TextContent(type="text", text=p) for p in parts]


def claim(result: CallToolResult, mapping: ToolMapping = MAPPING, **kw: Any) -> dict[str, Any]:
    """The claim of a result of `get_invoice_status(INV-1)`, validated against the wire format."""
    envelope = claim_from_result(
        result, "get_invoice_status", mapping, arguments=ARGS, now=NOW, **kw
    )
    ClaimEnvelope.model_validate(envelope)
    return envelope


def test_structured_content_gives_value_time_and_provenance() -> None:
    """The structured result is read by the mapping's keys; provenance comes from the mapping."""
    result = CallToolResult(
        content=text("ignored"),
        structured_content={"status": "paid", "as_of": "2026-09-14T09:11:58Z"},
    )
    envelope = claim(result, agent_id="agent-7")
    assert {
        "subject": "invoice:INV-1",
        "field": "payment_status",
        "source": "billing-api",
        "lineage": "ledger",
        "authority": "system_of_record",
        "observed_at": "2026-09-14T09:11:58Z",
        "status": "ok",
        "value": "paid",
        "tool": "get_invoice_status",
        "agent_id": "agent-7",
    } == {k: v for k, v in envelope.items() if k != "claim_id"}


def test_json_text_content_is_read_when_there_is_no_structured_content() -> None:
    """An older server's JSON text gives the same claim as structured content would."""
    structured = CallToolResult(content=[], structured_content={"status": "unpaid"})
    as_text = CallToolResult(content=text(json.dumps({"status": "unpaid"})))
    assert claim(structured) == claim(as_text)
    assert ("ok", "unpaid", NOW) == (
        claim(as_text)["status"],
        claim(as_text)["value"],
        claim(as_text)["observed_at"],
    )


def test_is_error_becomes_status_error_never_a_value() -> None:
    """A failed call of no recognised kind is `status: error` with no value at all."""
    result = CallToolResult(
        content=text("Error executing tool get_invoice_status: ledger exploded"), is_error=True
    )
    envelope = claim(result)
    assert ("error", False) == (envelope["status"], "value" in envelope)
    assert "ledger exploded" in envelope["error_detail"]


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ("invoice INV-1 not found", "not_found"),
        ("HTTP 403: Permission denied for this tenant", "forbidden"),
        ("upstream timed out after 30s", "unavailable"),
        ("division by zero", "error"),
    ],
)
def test_error_text_is_recognised(message: str, status: str) -> None:
    """not_found, forbidden and unavailable are told apart by phrases in the error text."""
    result = CallToolResult(content=text(f"Error executing tool: {message}"), is_error=True)
    assert status == claim(result)["status"]


def test_structured_status_key_wins_over_the_text() -> None:
    """A tool naming its failure in a structured key is believed, with or without isError."""
    mapping = MAPPING.model_copy(update={"errors": MAPPING.errors.model_copy(
        update={"status_key": "error_kind"})})  # fmt: skip
    failed = CallToolResult(
        content=text("denied"), structured_content={"error_kind": "not_found"}, is_error=True
    )
    quiet = CallToolResult(content=[], structured_content={"error_kind": "forbidden"})
    assert ("not_found", "forbidden") == (
        claim(failed, mapping)["status"],
        claim(quiet, mapping)["status"],
    )


def test_result_without_the_value_key_is_an_error_not_an_empty_value() -> None:
    """A successful call whose result lacks the value is `error`, never `ok` with null."""
    result = CallToolResult(content=[], structured_content={"state": "paid"})
    envelope = claim(result)
    assert ("error", False) == (envelope["status"], "value" in envelope)
    assert "no `status`" in envelope["error_detail"]


def test_non_text_content_is_not_a_value() -> None:
    """An image-only result has no JSON to read: `error`."""
    result = CallToolResult(content=[ImageContent(type="image", data="AA==", mimeType="image/png")])
    assert "error" == claim(result)["status"]


def test_claim_id_is_derived_from_content_and_signature_verifies() -> None:
    """Same result, same id; a signing key gives a signature the worker accepts."""
    result = CallToolResult(content=[], structured_content={"status": "paid"})
    first, again = claim(result), claim(result)
    other = claim(CallToolResult(content=[], structured_content={"status": "unpaid"}))
    assert first["claim_id"] == again["claim_id"] != other["claim_id"]
    signed_claim = claim(result, signing_key=b"k")
    assert None is verify(signed_claim, b"k")
    assert first["claim_id"] == signed_claim["claim_id"]


def test_a_claim_asks_for_its_decide_mode_signed_over_and_keeps_its_id() -> None:
    """`decide` is in the claim before it is signed; the derived id does not change."""
    result = CallToolResult(content=[], structuredContent={"status": "paid"})
    plain = claim(result)
    early = claim(result, decide="on_arrival", signing_key=b"k")
    assert ("on_arrival", None) == (early["decide"], verify(early, b"k"))
    assert plain["claim_id"] == early["claim_id"] and "decide" not in plain


def test_subject_needs_its_names() -> None:
    """A subject template naming a key nobody gave cannot be attributed to a fact."""
    mapping = MAPPING.model_copy(update={"subject": "invoice:{number}"})
    with pytest.raises(MappingError, match="no scalar `number`"):
        claim(CallToolResult(content=[], structured_content={"status": "paid"}), mapping)


def test_mapping_file_errors_name_file_line_and_key() -> None:
    """A missing key is reported at its entry, an unknown one where it stands."""
    head = "tools:\n  t:\n    subject: s\n    field: f\n    value: v\n"
    with pytest.raises(MappingError) as missing:
        parse_mappings(head, "m.yaml")
    with pytest.raises(MappingError) as unknown:
        parse_mappings(head + "    source: x\n    sorce: y\n", "m.yaml")
    assert ("m.yaml:2: tools.t.source: Field required", "m.yaml:7: tools.t.sorce: unknown key") == (
        str(missing.value),
        str(unknown.value),
    )


def test_example_mappings_load() -> None:
    """The example's mapping file is valid and maps both tools."""
    mappings = load_mappings(EXAMPLE / "mappings.yaml")
    assert {"get_invoice_status", "get_report_status"} == set(mappings.tools)


def _example_server() -> Any:
    """The example MCPServer object (imported from its file)."""
    spec = importlib.util.spec_from_file_location("mcp_demo_server", EXAMPLE / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


async def test_example_server_in_memory_disagrees_and_fails_as_documented() -> None:
    """Over an in-memory session: billing paid, reporting unpaid, not found and plain error."""
    mappings = load_mappings(EXAMPLE / "mappings.yaml")
    server = _example_server()
    async with Client(server) as session:

        async def ask(tool: str, invoice: str) -> dict[str, Any]:
            return await call_tool_claim(session, mappings, tool, {"invoice_id": invoice}, now=NOW)

        paid = await ask("get_invoice_status", "INV-1")
        unpaid = await ask("get_report_status", "INV-1")
        missing = await ask("get_invoice_status", "INV-404")
        broken = await ask("get_report_status", "INV-BROKEN")
    assert [("ok", "paid"), ("ok", "unpaid"), ("not_found", None), ("error", None)] == [
        (c["status"], c.get("value")) for c in (paid, unpaid, missing, broken)
    ]
    assert ("billing-api", "reporting-replica") == (paid["source"], unpaid["source"])
    assert {"invoice:INV-404", "invoice:INV-BROKEN"} == {missing["subject"], broken["subject"]}
