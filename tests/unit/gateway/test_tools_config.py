"""The gateway config's `tools:` section: validated, errors naming file, line and key."""

from __future__ import annotations

import pytest
import yaml
from claimwatch.client.mcp_adapter import MappingError
from claimwatch.gateway.arbitrate import Arbitrator
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.outbox import Outbox
from claimwatch.gateway.tools_config import parse_tools, signing_keys

CONFIG = """\
decide_timeout: 2s
tools:
  get_status:
    subject: "invoice:{invoice_id}"
    field: payment_status
    value: status
    source: billing-api
    on_escalate: error
{extra}
"""


def parsed(extra: str = "") -> object:
    text = CONFIG.replace("{extra}", extra)
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    return parse_tools(yaml.safe_load(text)["tools"], ConfigSource("gateway.yaml", text, root))


def test_a_valid_section() -> None:
    tools = parsed()
    assert isinstance(tools, dict)
    assert "error" == tools["get_status"].on_escalate
    assert (
        "annotate"
        == parse_tools(
            {"t": {"subject": "s", "field": "f", "value": "$", "source": "x"}}, ConfigSource("g")
        )["t"].on_escalate
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "  other:\n    subject: s\n    field: f\n    value: v\n    source: x\n"
            "    on_escalate: warn",
            "gateway.yaml:14: tools.other.on_escalate: Input should be 'annotate' or 'error'",
        ),
        (
            "  other:\n    subject: s\n    field: f\n    value: v\n    source: x\n    colour: red",
            "gateway.yaml:14: tools.other.colour: unknown key",
        ),
        (
            "  other:\n    field: f\n    value: v\n    source: x",
            "gateway.yaml:9: tools.other.subject: Field required",
        ),
    ],
)
def test_errors_name_file_line_and_key(extra: str, expected: str) -> None:
    with pytest.raises(MappingError) as caught:
        parsed(extra)
    assert expected == str(caught.value)


def test_governance_checks_are_not_part_of_the_claim_mapping() -> None:
    """`checks` belongs to governance: a checks-only entry makes no claims, others keep theirs."""
    tools = parsed(
        "    checks: {result: invoice_read}\n  send_email:\n    checks: {arguments: outbound}"
    )
    assert ["get_status"] == sorted(tools)


def test_a_section_that_is_no_mapping() -> None:
    with pytest.raises(MappingError) as caught:
        parse_tools(["get_status"], ConfigSource("gateway.yaml"))
    assert "gateway.yaml: tools: must be a mapping of tool names to claim mappings" == str(
        caught.value
    )


def test_a_missing_signing_key_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GW_TEST_KEY", raising=False)
    raw = {
        "t": {
            "subject": "s",
            "field": "f",
            "value": "$",
            "source": "x",
            "signing": {"env": "GW_TEST_KEY"},
        }
    }
    with pytest.raises(MappingError) as caught:
        Arbitrator.from_config(raw, ConfigSource("gateway.yaml"), GatewaySettings())
    assert str(caught.value).startswith("gateway.yaml: tools.t.signing: ")
    assert "GW_TEST_KEY is not set" in str(caught.value)
    monkeypatch.setenv("GW_TEST_KEY", "k" * 32)
    assert {"t": b"k" * 32} == signing_keys(parse_tools(raw, ConfigSource("g")), ConfigSource("g"))


def test_a_bad_worker_url_stops_the_start() -> None:
    with pytest.raises(ValueError, match="has no http:// or https:// scheme"):
        Arbitrator.from_config({}, ConfigSource("g"), GatewaySettings(worker_url="localhost:6066"))


def test_outbox_is_bounded() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Outbox(0)
