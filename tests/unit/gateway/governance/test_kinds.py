"""`build_check`: the check each `governance.checks` entry names by its kind."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance import opa
from claimwatch.gateway.governance.checks import CheckEnv
from claimwatch.gateway.governance.kinds import build_check
from claimwatch.gateway.governance.pii import PiiCheck
from claimwatch.gateway.governance.trust import TrustCheck
from claimwatch.policy.source import PolicyError

from tests.support.checks import ENV, FakeCheck, source_of

PII = {"kind": "pii", "phone_regions": ["US"]}
TRUST = {
    "kind": "trust",
    "subject": "domain:{url|host}",
    "field": "trust",
    "otherwise": {"decision": "allow", "kind": "trust_unknown", "strength": 0.0},
}


@pytest.mark.parametrize(("raw", "kind"), [(PII, PiiCheck), (TRUST, TrustCheck)])
def test_build_check_makes_the_kind_named(raw: dict[str, Any], kind: type) -> None:
    source, checks = source_of({"c": raw})
    built = build_check("c", checks["c"], source, ENV)
    assert isinstance(built, kind)
    assert "c" == built.name


def test_build_check_hands_an_opa_check_to_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, dict[str, Any], CheckEnv]] = []

    def from_config(name: str, raw: dict[str, Any], source: ConfigSource, env: CheckEnv) -> Any:
        asked.append((name, dict(raw), env))
        return FakeCheck(name)

    monkeypatch.setattr(opa.OpaCheck, "from_config", from_config)
    raw = {"kind": "opa", "package": "claimwatch.packs.pii"}
    source, checks = source_of({"opa_pii": raw})
    built = build_check("opa_pii", checks["opa_pii"], source, ENV)
    assert [("opa_pii", raw, ENV)] == asked
    assert FakeCheck("opa_pii") == built


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"kind": "rego", "package": "x"},
            "gateway.yaml:4: governance.checks.opa_pii.kind: 'rego' is not one of pii, opa, trust",
        ),
        (
            {"package": "x"},
            "gateway.yaml:3: governance.checks.opa_pii: missing: `kind`, one of pii, opa, trust",
        ),
        (
            "opa",
            "gateway.yaml:3: governance.checks.opa_pii: a check is a mapping with a `kind` "
            "(pii, opa, trust); see docs/gateway-checks.md",
        ),
    ],
)
def test_build_check_refuses_what_is_no_check(raw: Any, expected: str) -> None:
    source, checks = source_of({"opa_pii": raw})
    with pytest.raises(PolicyError) as refused:
        build_check("opa_pii", checks["opa_pii"], source, ENV)
    assert expected == str(refused.value)
