"""The `opa` check without a server: its configuration, and which answers are decisions.

The check against the real OPA is tests/integration/test_opa_packs.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.governance.checks import CallView, CheckEnv
from claimwatch.gateway.governance.opa import OpaCheck, OpaDecision, opa_input
from claimwatch.gateway.governance.targets import Mask, PatternMask, Target
from claimwatch.policy.source import PolicyError, read_yaml
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

ENV = CheckEnv(GatewaySettings(), "http://127.0.0.1:8181", 0.5, 1 << 20)


def built(check: str) -> OpaCheck:
    """The check `opa_x` of a gateway file whose `governance.checks.opa_x` is `check`."""
    text = "governance:\n  checks:\n    opa_x:\n" + "".join(
        f"      {line}\n" for line in check.strip().splitlines()
    )
    data, root = read_yaml(text, "gateway.yaml")
    raw = data["governance"]["checks"]["opa_x"]
    return OpaCheck.from_config("opa_x", raw, ConfigSource("gateway.yaml", text, root), ENV)


def test_defaults_come_from_the_environment() -> None:
    check = built("kind: opa\npackage: claimwatch.packs.pii")
    assert ("opa_x", 0.5, "claimwatch/packs/pii/decision") == (
        check.name,
        check.timeout_s,
        check.path,
    )
    assert ("http://127.0.0.1:8181", 0.5) == (check.client.url, check.client.timeout_s)


def test_rule_timeout_and_url_are_the_check_s_own() -> None:
    check = built(
        "kind: opa\npackage: claimwatch.packs.financial\nrule: audit\n"
        "timeout: 300ms\nurl: http://opa.internal:8181/"
    )
    assert (0.3, "claimwatch/packs/financial/audit") == (check.timeout_s, check.path)
    assert ("http://opa.internal:8181", 0.3) == (check.client.url, check.client.timeout_s)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            "kind: opa\npackage: claimwatch.packs.pii\ncolour: red",
            "gateway.yaml:6: governance.checks.opa_x.colour: unknown key: an opa check has "
            "kind, package, rule, timeout, url (see docs/policy-packs.md)",
        ),
        (
            "kind: opa",
            "gateway.yaml:3: governance.checks.opa_x.package: missing: name the pack's Rego "
            "package, e.g. claimwatch.packs.pii (see docs/policy-packs.md)",
        ),
        (
            "kind: opa\npackage: claimwatch/packs/pii",
            "gateway.yaml:5: governance.checks.opa_x.package: 'claimwatch/packs/pii' is not a "
            "Rego package name, e.g. claimwatch.packs.pii",
        ),
        (
            "kind: opa\npackage: claimwatch.packs.pii\nrule: a.b",
            "gateway.yaml:6: governance.checks.opa_x.rule: 'a.b' is not a Rego rule name, "
            "e.g. decision",
        ),
        (
            "kind: opa\npackage: claimwatch.packs.pii\ntimeout: soon",
            "gateway.yaml:6: governance.checks.opa_x.timeout: 'soon' is not a duration: write "
            "a number and a unit (ms, s, m, h, d), e.g. 500ms or 5m",
        ),
        (
            "kind: opa\npackage: claimwatch.packs.pii\ntimeout: 0s",
            "gateway.yaml:6: governance.checks.opa_x.timeout: a timeout must be more than 0, "
            "e.g. 500ms",
        ),
        (
            "kind: opa\npackage: claimwatch.packs.pii\nurl: 127.0.0.1:8181",
            "gateway.yaml:6: governance.checks.opa_x.url: '127.0.0.1:8181' is no http(s) URL: "
            "write e.g. http://127.0.0.1:8181",
        ),
    ],
)
def test_config_errors_name_the_line_and_key(check: str, message: str) -> None:
    with pytest.raises(PolicyError) as failed:
        built(check)
    assert message == str(failed.value)


def test_the_input_is_the_call_its_texts_and_its_result() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="MRN 00482913")],
        structured_content={"dx": "E11.9"},
        is_error=True,
    )
    targets = (Target("/content/0/text", "MRN 00482913"), Target("/structured/dx", "E11.9"))
    call = CallView("read_record", "records", "result", {"patient_id": "P-17"}, result, targets)
    assert {
        "tool": "read_record",
        "server": "records",
        "phase": "result",
        "arguments": {"patient_id": "P-17"},
        "texts": [
            {"pointer": "/content/0/text", "text": "MRN 00482913"},
            {"pointer": "/structured/dx", "text": "E11.9"},
        ],
        "structured": {"dx": "E11.9"},
        "is_error": True,
    } == opa_input(call)


def test_the_arguments_phase_has_no_result() -> None:
    call = CallView("send_email", None, "arguments", {"to": "a@b.org"}, None, ())
    assert (None, None, False, []) == (
        opa_input(call)["server"],
        opa_input(call)["structured"],
        opa_input(call)["is_error"],
        opa_input(call)["texts"],
    )


def test_a_decision_becomes_the_argument_with_its_mask() -> None:
    answer = {
        "decision": "modify",
        "kind": "financial_masking",
        "claim": "masked",
        "strength": 1,
        "mask": [{"pattern": r"\bDE\d{2}\b", "label": "IBAN"}, {"pattern": "x"}, {"pointer": "/a"}],
    }
    argument = OpaDecision.model_validate(answer).argument()
    assert ("financial_masking", "masked", 1.0, "modify") == (
        argument.kind,
        argument.claim,
        argument.strength,
        argument.decision,
    )
    assert (
        Mask(
            patterns=(PatternMask(r"\bDE\d{2}\b", "IBAN"), PatternMask("x", "REDACTED")),
            pointers=("/a",),
        )
        == argument.mask
    )


GOOD: dict[str, Any] = {"decision": "allow", "kind": "k", "claim": "c", "strength": 0.5}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"decision": "maybe"}, ("decision",)),
        ({"strength": -0.1}, ("strength",)),
        ({"strength": True}, ("strength",)),
        ({"strength": "0.5"}, ("strength",)),
        ({"kind": ""}, ("kind",)),
        ({"kind": "k" * 129}, ("kind",)),
        ({"claim": "c" * 4097}, ("claim",)),
        ({"mask": [{"pattern": "[", "label": "X"}]}, ("mask", 0, "pattern")),
        ({"mask": [{"label": "X"}]}, ("mask", 0)),
        ({"mask": [{"pattern": "x", "pointer": "/a"}]}, ("mask", 0)),
        ({"mask": [{"pointer": "/a", "label": "X"}]}, ("mask", 0)),
        ({"mask": [{"pointer": "a"}]}, ("mask", 0, "pointer")),
        ({"mask": [{"pattern": "x", "label": "lower case"}]}, ("mask", 0, "label")),
        ({"extra": 1}, ("extra",)),
    ],
)
def test_answers_that_are_no_decision_are_refused(
    change: dict[str, Any], where: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as failed:
        OpaDecision.model_validate({**GOOD, **change})
    assert where == failed.value.errors()[0]["loc"]
