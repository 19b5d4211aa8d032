"""`run_checks`: all at once, each bounded, never raising."""

from __future__ import annotations

import logging
import time

import pytest
from claimwatch.gateway.governance.checks import (
    Argument,
    CheckFailed,
    Outcome,
    run_checks,
)

from tests.support.checks import CLEAR, FakeCheck, arguments_call

CALL = arguments_call({"body": "hi"})


def summary(outcomes: list[Outcome]) -> list[tuple[str, Argument | None, str | None]]:
    return [(o.name, o.argument, o.error) for o in outcomes]


async def test_outcomes_come_in_check_name_order() -> None:
    checks = [FakeCheck("trust_domain"), FakeCheck("opa_pii", delay_s=0.05), FakeCheck("pii")]
    outcomes = await run_checks(checks, CALL, 2.0)
    assert [("opa_pii", CLEAR, None), ("pii", CLEAR, None), ("trust_domain", CLEAR, None)] == (
        summary(outcomes)
    )


async def test_a_check_failed_keeps_its_message() -> None:
    outcomes = await run_checks(
        [FakeCheck("opa_pii", error=CheckFailed("OPA 500: boom"))], CALL, 2.0
    )
    assert [("opa_pii", None, "OPA 500: boom")] == summary(outcomes)


async def test_a_slow_check_gets_no_answer_within_its_timeout() -> None:
    started = time.perf_counter()
    outcomes = await run_checks(
        [FakeCheck("opa_pii", delay_s=5.0, timeout_s=0.1), FakeCheck("pii")], CALL, 2.0
    )
    assert time.perf_counter() - started < 1.0
    assert [("opa_pii", None, "no answer within 100 ms"), ("pii", CLEAR, None)] == summary(outcomes)
    assert 100 <= outcomes[0].elapsed_ms < 1000


async def test_the_budget_bounds_a_check_with_a_longer_timeout() -> None:
    outcomes = await run_checks([FakeCheck("trust", delay_s=5.0, timeout_s=3.0)], CALL, 0.2)
    assert [("trust", None, "no answer within 200 ms")] == summary(outcomes)


async def test_any_other_exception_is_an_internal_error_logged_with_its_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="claimwatch.gateway.governance.checks"):
        outcomes = await run_checks([FakeCheck("pii", error=KeyError("body"))], CALL, 2.0)
    assert [("pii", None, "internal_error: KeyError: 'body'")] == summary(outcomes)
    assert ["governance check pii failed on send_email (arguments)"] == [
        r.getMessage() for r in caplog.records
    ]
    assert caplog.records[0].exc_info is not None


async def test_checks_run_at_once() -> None:
    checks = [FakeCheck(name, delay_s=0.2) for name in ("a", "b", "c")]
    started = time.perf_counter()
    outcomes = await run_checks(checks, CALL, 2.0)
    elapsed = time.perf_counter() - started
    assert ["a", "b", "c"] == [o.name for o in outcomes if o.argument is not None]
    assert elapsed < 0.4, f"three checks of 200 ms took {elapsed * 1000:.0f} ms"


async def test_no_checks_give_no_outcomes() -> None:
    assert [] == await run_checks([], CALL, 2.0)
