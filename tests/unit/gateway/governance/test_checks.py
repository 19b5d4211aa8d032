"""`run_checks` (all at once, bounded, never raising) and `build_check` (by kind)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import pytest
from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance import opa
from claimwatch.gateway.governance.checks import (
    Argument,
    CallView,
    CheckEnv,
    CheckFailed,
    Outcome,
    build_check,
    run_checks,
)
from claimwatch.gateway.governance.pii import PiiCheck
from claimwatch.gateway.governance.trust import TrustCheck
from claimwatch.policy.source import PolicyError

from tests.support.checks import ENV, arguments_call, source_of

CLEAR = Argument("pii_clear", "nothing", 0.3, "allow")


@dataclass
class Fake:
    """A check that answers after `delay_s` with its argument, or raises `error`."""

    name: str
    delay_s: float = 0.0
    error: Exception | None = None
    timeout_s: float = 1.0

    async def argue(self, call: CallView) -> Argument:
        await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        return CLEAR

    async def aclose(self) -> None:
        return None


CALL = arguments_call({"body": "hi"})


def summary(outcomes: list[Outcome]) -> list[tuple[str, Argument | None, str | None]]:
    return [(o.name, o.argument, o.error) for o in outcomes]


async def test_outcomes_come_in_check_name_order() -> None:
    checks = [Fake("trust_domain"), Fake("opa_pii", delay_s=0.05), Fake("pii")]
    outcomes = await run_checks(checks, CALL, 2.0)
    assert [("opa_pii", CLEAR, None), ("pii", CLEAR, None), ("trust_domain", CLEAR, None)] == (
        summary(outcomes)
    )


async def test_a_check_failed_keeps_its_message() -> None:
    outcomes = await run_checks([Fake("opa_pii", error=CheckFailed("OPA 500: boom"))], CALL, 2.0)
    assert [("opa_pii", None, "OPA 500: boom")] == summary(outcomes)


async def test_a_slow_check_gets_no_answer_within_its_timeout() -> None:
    started = time.perf_counter()
    outcomes = await run_checks(
        [Fake("opa_pii", delay_s=5.0, timeout_s=0.1), Fake("pii")], CALL, 2.0
    )
    assert time.perf_counter() - started < 1.0
    assert [("opa_pii", None, "no answer within 100 ms"), ("pii", CLEAR, None)] == summary(outcomes)
    assert 100 <= outcomes[0].elapsed_ms < 1000


async def test_the_budget_bounds_a_check_with_a_longer_timeout() -> None:
    outcomes = await run_checks([Fake("trust", delay_s=5.0, timeout_s=3.0)], CALL, 0.2)
    assert [("trust", None, "no answer within 200 ms")] == summary(outcomes)


async def test_any_other_exception_is_an_internal_error_logged_with_its_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="claimwatch.gateway.governance.checks"):
        outcomes = await run_checks([Fake("pii", error=KeyError("body"))], CALL, 2.0)
    assert [("pii", None, "internal_error: KeyError: 'body'")] == summary(outcomes)
    assert ["governance check pii failed on send_email (arguments)"] == [
        r.getMessage() for r in caplog.records
    ]
    assert caplog.records[0].exc_info is not None


async def test_checks_run_at_once() -> None:
    checks = [Fake(name, delay_s=0.2) for name in ("a", "b", "c")]
    started = time.perf_counter()
    outcomes = await run_checks(checks, CALL, 2.0)
    elapsed = time.perf_counter() - started
    assert ["a", "b", "c"] == [o.name for o in outcomes if o.argument is not None]
    assert elapsed < 0.4, f"three checks of 200 ms took {elapsed * 1000:.0f} ms"


async def test_no_checks_give_no_outcomes() -> None:
    assert [] == await run_checks([], CALL, 2.0)


# ------------------------------------------------------------------------------ build_check

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
        return Fake(name)

    monkeypatch.setattr(opa.OpaCheck, "from_config", from_config)
    raw = {"kind": "opa", "package": "claimwatch.packs.pii"}
    source, checks = source_of({"opa_pii": raw})
    built = build_check("opa_pii", checks["opa_pii"], source, ENV)
    assert [("opa_pii", raw, ENV)] == asked
    assert Fake("opa_pii") == built


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
