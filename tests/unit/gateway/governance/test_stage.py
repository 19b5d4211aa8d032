"""The governance stage in process: fake checks, a fake broker, the `alpha` upstream over stdio.

The gateway is the real `Gateway` with the real `Governance` gate; the agent is the SDK's
client on the gateway's server object. The checks are fakes (tests/support/checks.py),
so the stage's own behaviour is what is tested: which checks run, how a failure, a slow
check or a raising gate ends (never a silent allow), what is forwarded and returned, and
what is recorded.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from claimwatch.core.argue.decide import AttackRule
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.core.argue.semantics import Semantics
from claimwatch.gateway.config import Upstream
from claimwatch.gateway.gate import Checked, Gated
from claimwatch.gateway.governance.checks import CheckFailed, Phase
from claimwatch.gateway.governance.config import GovernanceSettings
from claimwatch.gateway.governance.record import VerdictRecorder
from claimwatch.gateway.governance.stage import Governance
from claimwatch.gateway.governance.targets import Mask, Span
from claimwatch.gateway.server import Gateway
from mcp import Client
from mcp.types import CallToolResult

from tests.support.checks import FakeCheck, arg
from tests.support.gateway import text_of, upstream_command
from tests.support.governance import FakePublisher
from tests.support.paths import REPO

ALPHA = Upstream(command=upstream_command("alpha"), cwd=str(REPO), timeout=20_000_000)
CONFIG = VerdictConfig(
    policy_version="stage-1",
    rules=(AttackRule("pii_detected", "baseline_allow", "undercut"),),
    expected={"read": ("a", "b"), "send": ("a",)},
    expected_by_type=True,
    timeout_us=2_000_000,
    remember_us=60_000_000,
    semantics=Semantics.GROUNDED,
)
ALLOW = arg("baseline_allow", "allow", 0.3)
KEY_MASK = Mask(spans=(Span("/arguments/key", 0, 17, "EMAIL"),))


class Hook:
    """A result hook that records what reached it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(
        self, tool: str, arguments: dict[str, Any], result: CallToolResult
    ) -> CallToolResult:
        self.calls.append((tool, arguments))
        return result


def governance(
    checks: list[FakeCheck],
    phases: dict[str, dict[Phase, str]] | None = None,
    *,
    publisher: FakePublisher | None = None,
    timeout_s: float = 2.0,
    on_undecided: str = "deny",
) -> Governance:
    broker = publisher or FakePublisher()
    return Governance(
        CONFIG,
        phases or {"lookup": {"result": "read"}},
        {c.name: c for c in checks},
        GovernanceSettings(timeout_s, on_undecided, 0.5),  # type: ignore[arg-type]
        VerdictRecorder(lambda: broker, timeout_s=0.5),  # type: ignore[arg-type,return-value]
    )


async def call(gate: Any, tool: str = "lookup", **arguments: Any) -> tuple[CallToolResult, Hook]:
    hook = Hook()
    gateway = Gateway({"alpha": ALPHA}, hook=hook, gate=gate)
    async with gateway.serving(), Client(gateway.server) as client:
        result = await client.call_tool(tool, arguments or {"key": "k"})
    return result, hook


def note(result: CallToolResult, phase: str = "result") -> dict[str, Any]:
    found: dict[str, Any] = (result.structured_content or {})["claimwatch"]["governance"][phase]
    return found


def check_of(found: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in found["checks"] if c["name"] == name)


async def test_allowed_results_pass_with_the_note_and_are_recorded() -> None:
    broker = FakePublisher()
    gate = governance([FakeCheck("a", ALLOW), FakeCheck("b", ALLOW)], publisher=broker)
    result, hook = await call(gate)
    found = note(result)
    assert not result.is_error
    assert {"server": "alpha", "key": "k", "value": 1} == {
        k: v for k, v in (result.structured_content or {}).items() if k != "claimwatch"
    }
    assert ("allow", "passed", "sent", ["a", "b"]) == (
        found["decision"],
        found["applied"],
        found["recorded"],
        found["accepted"],
    )
    assert [("lookup", {"key": "k"})] == hook.calls
    keys = {key.decode() for key, _ in broker.sent}
    assert {found["request_id"]} == keys
    assert 2 == len(broker.sent)
    await gate.aclose()


async def test_a_failing_check_denies() -> None:
    down = FakeCheck("b", error=CheckFailed("OPA at http://127.0.0.1:9 is unreachable"))
    result, hook = await call(governance([FakeCheck("a", ALLOW), down]))
    found = note(result)
    assert result.is_error
    assert ("undecided", "escalated_denied", ["b"], True) == (
        found["decision"],
        found["applied"],
        found["missing_checks"],
        found["timed_out"],
    )
    assert ("failed", "OPA at http://127.0.0.1:9 is unreachable") == (
        check_of(found, "b")["status"],
        check_of(found, "b")["error"],
    )
    assert "unreachable" in text_of(result)
    assert "'value'" not in text_of(result)  # the upstream's result is withheld
    assert [] == hook.calls


async def test_a_raising_check_denies_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    broken = FakeCheck("b", error=ZeroDivisionError("division by zero"))
    with caplog.at_level(logging.ERROR):
        result, _ = await call(governance([FakeCheck("a", ALLOW), broken]))
    assert result.is_error
    assert (
        "internal_error: ZeroDivisionError: division by zero"
        == check_of(note(result), "b")["error"]
    )
    assert any(r.exc_info and "governance check b" in r.getMessage() for r in caplog.records)


async def test_a_slow_check_is_cut_at_its_timeout() -> None:
    slow = FakeCheck("b", ALLOW, delay_s=30.0, timeout_s=0.2)
    started = time.monotonic()
    result, _ = await call(governance([FakeCheck("a", ALLOW), slow]))
    assert time.monotonic() - started < 10.0  # the upstream's start-up included
    assert result.is_error
    assert "no answer within 200 ms" == check_of(note(result), "b")["error"]
    assert "ok" == check_of(note(result), "a")["status"]


async def test_the_budget_bounds_all_checks() -> None:
    checks = [FakeCheck(n, ALLOW, delay_s=30.0, timeout_s=20.0) for n in ("a", "b")]
    result, _ = await call(governance(checks, timeout_s=0.3))
    found = note(result)
    assert ["no answer within 300 ms"] * 2 == [c["error"] for c in found["checks"]]
    assert all(c["ms"] < 2000 for c in found["checks"])
    assert ("undecided", ["a", "b"]) == (found["decision"], found["missing_checks"])


class RaisingGate:
    """Governs every tool, passes the arguments and raises on the result."""

    def governs(self, tool: str) -> bool:
        return True

    async def on_arguments(self, tool: str, server: str | None, arguments: dict[str, Any]) -> Gated:
        return Gated(arguments)

    async def on_result(
        self, tool: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked:
        raise KeyError("masked pointer")

    async def aclose(self) -> None:
        return None


async def test_a_raising_gate_denies_the_call() -> None:
    result, hook = await call(RaisingGate())
    assert result.is_error
    assert (
        "claimwatch governance failed on lookup: KeyError: 'masked pointer'; the result is withheld"
        == text_of(result)
    )
    assert [] == hook.calls


async def test_ungoverned_tools_are_untouched() -> None:
    check = FakeCheck("a", ALLOW)
    result, hook = await call(governance([check], {"alpha_rich": {"result": "send"}}))
    assert {"server": "alpha", "key": "k", "value": 1} == result.structured_content
    assert [] == check.calls
    assert [("lookup", {"key": "k"})] == hook.calls


async def test_withheld_result_makes_no_claim() -> None:
    deny = arg("pii_critical", "deny", 0.9, "1 critical PII item")
    result, hook = await call(governance([FakeCheck("a", deny), FakeCheck("b", ALLOW)]))
    found = note(result)
    assert result.is_error
    assert ("deny", "denied") == (found["decision"], found["applied"])
    assert text_of(result).startswith(
        "claimwatch governance denied lookup (result): "
        "a says deny (pii_critical: 1 critical PII item)"
    )
    assert [] == hook.calls


async def test_masked_arguments_are_forwarded_and_noted() -> None:
    mask = arg("pii_detected", "modify", 0.6, mask=KEY_MASK)
    gate = governance([FakeCheck("a", mask)], {"lookup": {"arguments": "send"}})
    result, hook = await call(gate, key="alice@example.org")
    assert "[EMAIL]" == (result.structured_content or {})["key"]  # what the upstream got
    assert [("lookup", {"key": "[EMAIL]"})] == hook.calls
    found = note(result, "arguments")
    assert ("modify", "masked") == (found["decision"], found["applied"])
    assert [{"pointer": "/arguments/key", "start": 0, "end": 17, "label": "EMAIL", "by": "a"}] == (
        found["masked"]
    )


async def test_a_modify_naming_no_mask_is_denied_and_forwards_nothing() -> None:
    gate = governance(
        [FakeCheck("a", arg("pii_detected", "modify", 0.6))], {"lookup": {"arguments": "send"}}
    )
    result, hook = await call(gate, key="alice@example.org")
    found = note(result, "arguments")
    assert result.is_error
    assert ("modify", "denied") == (found["decision"], found["applied"])
    assert "no accepted argument names what to mask" in text_of(result)
    assert [] == hook.calls


async def test_annotate_passes_an_undecided_call_with_the_escalation() -> None:
    down = FakeCheck("b", error=CheckFailed("worker busy"))
    result, hook = await call(governance([FakeCheck("a", ALLOW), down], on_undecided="annotate"))
    found = note(result)
    assert not result.is_error
    assert ("undecided", "escalated_passed") == (found["decision"], found["applied"])
    assert "treat it as unchecked" in text_of(result)
    assert 1 == len(hook.calls)


async def test_broker_down_still_decides_and_queues_the_record() -> None:
    gate = governance(
        [FakeCheck("a", ALLOW), FakeCheck("b", ALLOW)], publisher=FakePublisher(down=True)
    )
    result, _ = await call(gate)
    found = note(result)
    assert not result.is_error
    assert ("allow", "passed", "queued") == (found["decision"], found["applied"], found["recorded"])
    assert 2 == len(gate.recorder.outbox)
    await gate.aclose()
