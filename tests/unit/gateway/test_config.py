"""gateway.yaml: what it accepts, and errors that name the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.gateway.config import GatewaySettings, load_config, parse_config
from claimwatch.policy.source import PolicyError

from tests.support.paths import REPO

FULL = """\
worker_url: http://127.0.0.1:6066
bootstrap: 127.0.0.1:9092
topic_prefix: claimwatch.
decide_timeout: 500ms
servers:
  billing: {command: [python, server.py], env: {K: V}, cwd: /srv}
  ledger:
    url: "http://127.0.0.1:8765/mcp"
    headers: {Authorization: Bearer t}
    timeout: 5s
tools:
  get_balance:
    subject: "invoice:{invoice_id}"
    on_escalate: error
"""


def test_a_full_file_loads() -> None:
    """Settings, both kinds of server and the raw `tools:` section, lines kept."""
    config = parse_config(FULL, "gateway.yaml")
    assert GatewaySettings("http://127.0.0.1:6066", "127.0.0.1:9092", "claimwatch.", 0.5) == (
        config.settings
    )
    billing, ledger = config.servers["billing"], config.servers["ledger"]
    assert (["python", "server.py"], {"K": "V"}, "/srv", 60.0) == (
        billing.command,
        billing.env,
        billing.cwd,
        billing.timeout_seconds,
    )
    assert ("http://127.0.0.1:8765/mcp", 5.0) == (ledger.url, ledger.timeout_seconds)
    assert {"get_balance": {"subject": "invoice:{invoice_id}", "on_escalate": "error"}} == (
        config.tools_raw
    )
    assert 14 == config.source.line(("tools", "get_balance", "on_escalate"))
    error = config.source.error(("tools", "get_balance", "on_escalate"), "annotate or error")
    assert "gateway.yaml:14: tools.get_balance.on_escalate: annotate or error" == str(error)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("servers: [a]\n", "g.yaml:1: servers: Input should be a valid dictionary"),
        ("sevrers:\n  a: {command: [x]}\n", "g.yaml:1: sevrers: unknown key (see docs/gateway.md"),
        ("worker_url: x\n", "g.yaml:1: servers: missing: name at least one upstream"),
        ("servers:\n  a: {url: 'ftp://h/'}\n", "g.yaml:2: servers.a.url: 'ftp://h/' is no http"),
        ("servers:\n  a: {}\n", "g.yaml:2: servers.a: give either `command`"),
        ("servers:\n  a:\n    command: [x]\n    url: http://h/\n", "g.yaml:2: servers.a: give"),
        ("servers:\n  a:\n    command: [x]\n    timeout: 5q\n", "g.yaml:4: servers.a.timeout:"),
        ("servers:\n  a:\n    url: http://h/\n    env: {K: V}\n", "g.yaml:2: servers.a: `env`"),
        ("servers:\n  a b: {command: [x]}\n", "g.yaml:1: servers: server name 'a b'"),
        ("servers:\n  a: {command: [x]}\n  a: {command: [y]}\n", "g.yaml:3: servers.a: invalid"),
        ("servers:\n  a: {command: [x]\n", "g.yaml:3: (top level): invalid YAML"),
        ("- servers\n", "g.yaml:1: (top level): a gateway file must be a mapping"),
    ],
)
def test_an_unusable_file_names_file_line_and_key(text: str, expected: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_config(text, "g.yaml")
    assert str(caught.value).startswith(expected), str(caught.value)


def test_the_command_line_overrides_the_file() -> None:
    """A flag given wins over the file; one not given keeps the file's value."""
    settings = GatewaySettings("http://file:1", "file:9092", "file.", 2.0)
    assert GatewaySettings("http://flag:2", "file:9092", "file.", 2.0) == settings.overridden(
        worker_url="http://flag:2"
    )


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ("", (None, None)),
        ("documents:\ngovernance:\n", ({}, {})),
        ("documents: {timeout: 5s}\n", (None, {"timeout": "5s"})),
    ],
)
def test_a_section_without_a_value_is_present_and_empty(
    sections: str, expected: tuple[object, object]
) -> None:
    """`documents:` alone turns the document tools on; leaving the key out keeps them off."""
    config = parse_config("servers: {a: {command: [x]}}\n" + sections)
    assert expected == (config.governance_raw, config.documents_raw)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"nope\.yaml: .*cannot read: No such file"):
        load_config(tmp_path / "nope.yaml")


def test_the_example_gateway_file_loads() -> None:
    """examples/mcp/gateway.yaml: the example's server, over stdio."""
    config = load_config(REPO / "examples" / "mcp" / "gateway.yaml")
    assert ["billing"] == list(config.servers)
    assert {"get_invoice_status", "get_report_status"} == set(config.tools_raw)
