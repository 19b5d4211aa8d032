"""The gateway benchmark's parts: its gateway file, what it counts, how it judges the target."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimwatch.core.argue.request import VerdictConfig
from claimwatch.gateway.config import load_config
from claimwatch.gateway.governance.stage import build_gate
from claimwatch.policy.loading import load_policy
from mcp.types import CallToolResult, TextContent

from bench import gateway_bench
from bench.gateway_bench import Side, carried, gateway_config, percentile, report
from bench.governed import CHECKS, REQUEST_TYPE, governed_gateway, governed_policy

ROOT = Path(__file__).resolve().parents[2]


def test_the_gateway_file_is_the_examples_on_this_runs_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the gateway loads: the run's upstream, worker and prefix; one tool mapped."""
    monkeypatch.chdir(ROOT)
    path = gateway_config(
        tmp_path / "gateway.yaml", "http://127.0.0.1:9/mcp", "http://127.0.0.1:8", "p."
    )
    loaded = load_config(path)
    assert ("http://127.0.0.1:8", "p.") == (
        loaded.settings.worker_url,
        loaded.settings.topic_prefix,
    )
    assert ["http://127.0.0.1:9/mcp"] == [server.url for server in loaded.servers.values()]
    assert [gateway_bench.MAPPED] == list(loaded.tools_raw)


PASSED = {"applied": "passed"}


def _result(note: dict[str, object] | None, is_error: bool = False) -> CallToolResult:
    structured = {"status": "paid", **({"claimwatch": note} if note is not None else {})}
    return CallToolResult(
        content=[TextContent(type="text", text="x")],
        structured_content=structured,
        is_error=is_error,
    )


@pytest.mark.parametrize(
    ("note", "is_error", "expected"),
    [
        (None, False, "no claimwatch note"),
        ({"arbitrated": True, "outcome": "resolved"}, False, "decided: resolved"),
        ({"arbitrated": True, "outcome": "conflict"}, False, "decided: conflict"),
        ({"arbitrated": False, "claim": "queued"}, False, "unarbitrated: claim queued"),
        ({"arbitrated": True, "outcome": "escalate"}, True, "tool error"),
        (
            {
                "arbitrated": True,
                "outcome": "resolved",
                "governance": {"result": {"applied": "passed"}},
            },
            False,
            "governance passed, decided: resolved",
        ),
        (
            {"arbitrated": False, "governance": {"result": {"applied": "masked"}}},
            False,
            "governance masked, unarbitrated",
        ),
    ],
)
def test_what_a_result_carried(
    note: dict[str, object] | None, is_error: bool, expected: str
) -> None:
    assert expected == carried(_result(note, is_error))


@pytest.mark.parametrize(("q", "expected"), [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0), (1.0, 100.0)])
def test_percentile_is_the_nearest_rank(q: float, expected: float) -> None:
    assert expected == percentile([float(n) for n in range(1, 101)], q)


def _side(offset_ms: float, what: str) -> Side:
    side = Side(ms=[offset_ms + n for n in range(1, 101)])
    side.carried.update([what] * 100)
    side.cpu_s["gateway"] = 0.5
    return side


@pytest.mark.parametrize(("added_ms", "met"), [(40.0, True), (99.0, True), (101.0, False)])
def test_the_target_is_judged_on_the_measured_difference(added_ms: float, met: bool) -> None:
    """Met or not follows the gateway's spread minus the direct one; never assumed."""
    sides = {
        "direct": _side(0.0, "no claimwatch note"),
        "gateway": _side(added_ms, "decided: resolved"),
        "passthrough": _side(1.0, "no claimwatch note"),
        "in_agent": _side(added_ms - 2.0, "unarbitrated: DecisionTimeout"),
        "governed": _side(added_ms + 5.0, "governance passed, decided: resolved"),
    }
    figures = report(sides)
    assert {"p50_ms": added_ms, "p99_ms": added_ms} == figures["gateway_minus_direct"]
    assert {"p50_ms": 5.0, "p99_ms": 5.0} == figures["governed_minus_gateway"]
    assert met == figures["target"]["met"]
    assert figures["target"]["says"].startswith("met" if met else "not met")
    assert {"gateway": 1.0, "in_agent": 0.0} == figures["decided_share"]
    assert 5.0 == figures["gateway"]["cpu_ms_per_call"]["gateway"]


def test_the_governed_files_load_with_the_stage_on_the_mapped_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's governed policy and gateway file: what the worker and the gateway load."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(gateway_bench.KEY_ENV, "bench-test-key-0123456789abcdef0123456789")
    policy = governed_policy(gateway_bench.POLICY, tmp_path / "policy.yaml")
    compiled = VerdictConfig.from_policy(load_policy(policy).policy)
    assert list(CHECKS) == list(compiled.expected_for(REQUEST_TYPE))
    base = gateway_config(tmp_path / "gateway.yaml", "http://127.0.0.1:9/mcp", "http://h:8", "p.")
    path = governed_gateway(base, policy, "http://127.0.0.1:8181", tmp_path / "governed.yaml")
    loaded = load_config(path)
    assert {"checks": {"result": REQUEST_TYPE}}.items() <= loaded.tools_raw[
        gateway_bench.MAPPED
    ].items()
    gate = build_gate(loaded.governance_raw, loaded.tools_raw, loaded.source, loaded.settings)
    assert gate.governs(gateway_bench.MAPPED)
