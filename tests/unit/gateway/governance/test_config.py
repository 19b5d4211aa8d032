"""The `governance:` section and the tools' `checks:`: start-up refuses what cannot run.

Every error names the file, the line and the key (or the policy file and its key).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.gateway.config import parse_config
from claimwatch.gateway.gate import OPEN
from claimwatch.gateway.governance.config import (
    DEFAULT_OPA_URL,
    GovernanceSettings,
    parse_governance,
)
from claimwatch.gateway.governance.stage import build_gate
from claimwatch.policy.source import PolicyError

from tests.support.governance_examples import GOVERNANCE_POLICY
from tests.support.kafka import write_policy

POLICY = GOVERNANCE_POLICY.read_text(encoding="utf-8")

GATEWAY = """\
servers:
  records: {command: [python, server.py]}
governance:
  policy: policy.yaml
  checks:
    pii: {kind: pii, phone_regions: [US]}
    opa_pii: {kind: opa, package: claimwatch.packs.pii}
    opa_research: {kind: opa, package: claimwatch.packs.research}
    opa_financial: {kind: opa, package: claimwatch.packs.financial}
    trust_domain:
      kind: trust
      subject: "domain:{url|host}"
      field: trust
      otherwise: {decision: allow, kind: trust_unknown, strength: 0.0}
tools:
  fetch_page:
    checks: {result: web_content}
  send_email:
    checks: {arguments: outbound_message}
"""


def parsed(directory: Path, text: str, policy: str = POLICY) -> tuple[str, object]:
    """(the gateway file's path, the section parsed from it)."""
    write_policy(directory, policy)
    path = str(directory / "gateway.yaml")
    config = parse_config(text, path)
    return path, parse_governance(config.governance_raw, config.tools_raw, config.source)


def test_a_good_section_is_read_with_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAIMWATCH_OPA_URL", raising=False)
    _, governed = parsed(tmp_path, GATEWAY)
    assert governed is not None
    assert {
        "fetch_page": {"result": "web_content"},
        "send_email": {"arguments": "outbound_message"},
    } == (
        governed.phases  # type: ignore[attr-defined]
    )
    assert (GovernanceSettings(2.0, "deny", 1.0), DEFAULT_OPA_URL, 0.5, 1 << 20) == (
        governed.settings,  # type: ignore[attr-defined]
        governed.opa_url,  # type: ignore[attr-defined]
        governed.opa_timeout_s,  # type: ignore[attr-defined]
        governed.max_scan_bytes,  # type: ignore[attr-defined]
    )
    assert ("opa_pii", "pii", "trust_domain") == governed.config.expected_for("web_content")  # type: ignore[attr-defined]


def test_the_opa_url_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAIMWATCH_OPA_URL", "http://opa.internal:8181")
    _, governed = parsed(tmp_path, GATEWAY)
    assert "http://opa.internal:8181" == governed.opa_url  # type: ignore[attr-defined]


def test_nothing_governed_is_the_open_gate(tmp_path: Path) -> None:
    config = parse_config(
        "servers:\n  a: {command: [x]}\ntools:\n  t: {subject: 's:{id}'}\n", "g.yaml"
    )
    assert OPEN is build_gate(
        config.governance_raw, config.tools_raw, config.source, config.settings
    )


def swap(old: str, new: str) -> str:
    assert old in GATEWAY
    return GATEWAY.replace(old, new)


@pytest.mark.parametrize(
    ("text", "policy", "expected"),
    [
        pytest.param(
            swap("    pii: {kind: pii, phone_regions: [US]}\n", ""),
            POLICY,
            "{p}: argumentation.expected_checks.web_content: names check 'pii', which "
            "governance.checks does not define (gateway.yaml:5)",
            id="undefined check",
        ),
        pytest.param(
            swap("result: web_content", "result: web_contnet"),
            POLICY,
            "{g}:17: tools.fetch_page.checks.result: request type 'web_contnet' is not in the "
            "policy's argumentation.expected_checks (policy.yaml): known: outbound_message, "
            "record_read, statement_export, web_content",
            id="unknown request type",
        ),
        pytest.param(
            GATEWAY[: GATEWAY.index("governance:")] + GATEWAY[GATEWAY.index("tools:") :],
            POLICY,
            "{g}:5: tools.fetch_page.checks: needs the governance: section (policy, checks)",
            id="checks without governance",
        ),
        pytest.param(
            swap("  policy: policy.yaml\n", "  policy: policy.yaml\n  on_undecided: allow\n"),
            POLICY,
            "{g}:5: governance.on_undecided: Input should be 'deny' or 'annotate'",
            id="bad on_undecided",
        ),
        pytest.param(
            swap(
                "  policy: policy.yaml\n", "  policy: policy.yaml\n  opa: {url: 'tcp://opa:8181'}\n"
            ),
            POLICY,
            "{g}:5: governance.opa.url: 'tcp://opa:8181' is no http(s) URL: write e.g. "
            "http://127.0.0.1:8181",
            id="opa url not http",
        ),
        pytest.param(
            swap("  policy: policy.yaml\n", "  policy: policy.yaml\n  timeout: soon\n"),
            POLICY,
            "{g}:5: governance.timeout: 'soon' is not a duration: write a number and a unit",
            id="bad duration",
        ),
        pytest.param(
            swap("  policy: policy.yaml\n", "  policy: policy.yaml\n  tiemout: 2s\n"),
            POLICY,
            "{g}:5: governance.tiemout: unknown key (see docs/gateway-governance.md for the keys)",
            id="unknown key",
        ),
        pytest.param(
            swap("checks: {result: web_content}", "checks: {}"),
            POLICY,
            "{g}:17: tools.fetch_page.checks: name the request type of `arguments`, of `result`, "
            "or of both",
            id="checks naming no phase",
        ),
        pytest.param(
            swap("checks: {result: web_content}", "checks: {reply: web_content}"),
            POLICY,
            "{g}:17: tools.fetch_page.checks.reply: unknown key",
            id="unknown phase",
        ),
        pytest.param(
            GATEWAY,
            POLICY.replace(
                "outbound_message: [pii]",
                "outbound_message: [pii, " + ", ".join(f"c{i}" for i in range(16)) + "]",
            ),
            "{p}: argumentation.expected_checks.outbound_message: names check 'c0', which "
            "governance.checks does not define (gateway.yaml:5)",
            id="undefined checks before the count",
        ),
        pytest.param(
            GATEWAY,
            POLICY.replace("timeout: 2s", "timeout: 2 seconds"),
            "{p}:",
            id="the policy's own error",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_file_line_and_key(
    tmp_path: Path, text: str, policy: str, expected: str
) -> None:
    with pytest.raises(PolicyError) as raised:
        parsed(tmp_path, text, policy)
    wanted = expected.format(g=tmp_path / "gateway.yaml", p=tmp_path / "policy.yaml")
    assert str(raised.value).startswith(wanted), str(raised.value)


def test_more_checks_than_a_request_holds_are_refused(tmp_path: Path) -> None:
    names = [f"c{i:02}" for i in range(17)]
    policy = POLICY.replace("outbound_message: [pii]", f"outbound_message: [{', '.join(names)}]")
    checks = "".join(f"    {n}: {{kind: pii, phone_regions: [US]}}\n" for n in names)
    text = GATEWAY.replace("    trust_domain:\n", f"{checks}    trust_domain:\n")
    with pytest.raises(PolicyError) as raised:
        parsed(tmp_path, text, policy)
    assert (
        f"{tmp_path / 'policy.yaml'}: argumentation.expected_checks.outbound_message: 17 checks: "
        "a request holds at most 16 signals" == str(raised.value)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            swap("{kind: opa, package: claimwatch.packs.pii}", "{kind: rego}"),
            "{g}:7: governance.checks.opa_pii.kind: 'rego' is not one of pii, opa, trust",
            id="unknown kind",
        ),
        pytest.param(
            swap("      otherwise: {decision: allow, kind: trust_unknown, strength: 0.0}\n", ""),
            "{g}:10: governance.checks.trust_domain.otherwise: missing: say what a subject "
            "without a mapped decision argues, e.g. {decision: allow, kind: trust_unknown, "
            "strength: 0}",
            id="trust without otherwise",
        ),
    ],
)
def test_a_check_that_cannot_be_built_is_refused_at_start(
    tmp_path: Path, text: str, expected: str
) -> None:
    """The checks are built at start-up (by their kinds), so their errors stop it too."""
    write_policy(tmp_path, POLICY)
    config = parse_config(text, str(tmp_path / "gateway.yaml"))
    with pytest.raises(PolicyError) as raised:
        build_gate(config.governance_raw, config.tools_raw, config.source, config.settings)
    assert expected.replace("{g}", str(tmp_path / "gateway.yaml")) == str(raised.value)
