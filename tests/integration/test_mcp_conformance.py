"""The MCP conformance suite's server scenarios against claimwatch's gateway, over HTTP.

The suite (npm `@modelcontextprotocol/conformance`, `make tools`) tests a server at a URL
only, so the server runs as `tests.support.mcp_clients.HTTP_SERVER`. Most scenarios call the
fixtures of the suite's own reference server (tools named `test_image_content`, prompts
`test_simple_prompt`, resources `test://static-text`, ...), which an ordinary server does not
have; those fail here by design. The table below records every scenario's outcome today and
why, so a change either way (a new pass, a new failure, a new scenario) fails this test
until the table says what happened.

PASS: the scenario exercises what it names and the server does it. HOLLOW: the suite counts
it as passed, but only because of what the server lacks (the tool it calls does not exist and
the "Unknown tool" error result satisfies the check, or the list it checks is empty). FAIL:
the suite's check fails, for the reason given.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest

from tests.support.mcp_clients import HTTP_SERVER, conformance_server, serve_http


class Seen(StrEnum):
    """What one scenario showed about the server."""

    PASS = "pass"
    HOLLOW = "hollow"
    FAIL = "fail"


_NO_FIXTURE = "calls the reference server's fixture {}, which this server does not have"
_NO_METHOD = "the server does not implement {} (-32601 Method not found)"

#: every server scenario of the pinned suite (active and pending): what it shows, and why
EXPECTED: dict[str, tuple[Seen, str]] = {
    "server-initialize": (Seen.PASS, "initialize answers with a valid result"),
    "ping": (Seen.PASS, "ping answers"),
    "tools-list": (Seen.PASS, "tools/list: every tool has a name, description, inputSchema"),
    "server-sse-multiple-streams": (Seen.PASS, "concurrent POSTs each get a working SSE stream"),
    "dns-rebinding-protection": (
        Seen.PASS,
        "a foreign Host/Origin is refused, a localhost one accepted (the SDK's default)",
    ),
    "prompts-list": (Seen.FAIL, _NO_METHOD.format("prompts/list") + " (the gateway offers tools)"),
    "resources-list": (
        Seen.FAIL,
        _NO_METHOD.format("resources/list") + " (the gateway offers tools)",
    ),
    "tools-call-simple-text": (
        Seen.FAIL,
        _NO_FIXTURE.format("tool test_simple_text") + ": an unknown tool is invalid params",
    ),
    "tools-call-error": (
        Seen.FAIL,
        _NO_FIXTURE.format("tool test_error_handling") + ": an unknown tool is invalid params",
    ),
    "logging-set-level": (Seen.FAIL, _NO_METHOD.format("logging/setLevel")),
    "completion-complete": (Seen.FAIL, _NO_METHOD.format("completion/complete")),
    "resources-subscribe": (Seen.FAIL, _NO_METHOD.format("resources/subscribe")),
    "resources-unsubscribe": (Seen.FAIL, _NO_METHOD.format("resources/unsubscribe")),
    "tools-call-with-logging": (
        Seen.FAIL,
        _NO_METHOD.format("logging/setLevel") + ", sent before its tool test_tool_with_logging",
    ),
    "tools-call-image": (Seen.FAIL, _NO_FIXTURE.format("tool test_image_content")),
    "tools-call-audio": (Seen.FAIL, _NO_FIXTURE.format("tool test_audio_content")),
    "tools-call-embedded-resource": (
        Seen.FAIL,
        _NO_FIXTURE.format("tool test_embedded_resource"),
    ),
    "tools-call-mixed-content": (Seen.FAIL, _NO_FIXTURE.format("tool test_multiple_content_types")),
    "tools-call-with-progress": (Seen.FAIL, _NO_FIXTURE.format("tool test_tool_with_progress")),
    "tools-call-sampling": (Seen.FAIL, _NO_FIXTURE.format("tool test_sampling")),
    "tools-call-elicitation": (Seen.FAIL, _NO_FIXTURE.format("tool test_elicitation")),
    "elicitation-sep1034-defaults": (
        Seen.FAIL,
        _NO_FIXTURE.format("tool test_elicitation_sep1034_defaults"),
    ),
    "elicitation-sep1330-enums": (
        Seen.FAIL,
        _NO_FIXTURE.format("tool test_elicitation_sep1330_enums"),
    ),
    "resources-read-text": (Seen.FAIL, _NO_FIXTURE.format("resource test://static-text")),
    "resources-read-binary": (Seen.FAIL, _NO_FIXTURE.format("resource test://static-binary")),
    "resources-templates-read": (
        Seen.FAIL,
        _NO_FIXTURE.format("resource template test://template/{id}/data"),
    ),
    "prompts-get-simple": (Seen.FAIL, _NO_FIXTURE.format("prompt test_simple_prompt")),
    "prompts-get-with-args": (Seen.FAIL, _NO_FIXTURE.format("prompt test_prompt_with_arguments")),
    "prompts-get-embedded-resource": (
        Seen.FAIL,
        _NO_FIXTURE.format("prompt test_prompt_with_embedded_resource"),
    ),
    "prompts-get-with-image": (Seen.FAIL, _NO_FIXTURE.format("prompt test_prompt_with_image")),
    # the pending suite (not yet in the suite's default run)
    "json-schema-2020-12": (Seen.FAIL, _NO_FIXTURE.format("tool json_schema_2020_12_tool")),
    "server-sse-polling": (
        Seen.HOLLOW,
        "its checks pass on the gateway's HTTP transport although the fixture tool "
        "test_reconnection is absent (the SDK sends no SSE priming event: warnings)",
    ),
}

#: the scenarios whose pass is real (asserted on its own, so a reader sees it first)
PASSING = sorted(name for name, (seen, _) in EXPECTED.items() if Seen.PASS == seen)


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, from one run of the active and one of the pending suite."""
    home = tmp_path_factory.mktemp("home")
    results: dict[str, list[dict[str, Any]]] = {}
    with serve_http(HTTP_SERVER) as url:
        for suite in ("active", "pending"):
            out_dir = tmp_path_factory.mktemp(f"conformance-{suite}")
            results.update(conformance_server(url, out_dir, home, suite))
    return results


def _failures(scenario_checks: list[dict[str, Any]]) -> list[str]:
    """The failed checks of a scenario, as `id: message`."""
    return [
        f"{check['id']}: {check.get('errorMessage', '')}"
        for check in scenario_checks
        if "FAILURE" == check["status"]
    ]


def _seen(scenario_checks: list[dict[str, Any]]) -> Seen:
    """PASS when a scenario has no failed check (HOLLOW is told apart by the table alone)."""
    return Seen.FAIL if _failures(scenario_checks) else Seen.PASS


def test_every_scenario_has_an_expectation(checks: dict[str, list[dict[str, Any]]]) -> None:
    """The pinned suite runs exactly the scenarios of the table: none new, none gone."""
    assert sorted(EXPECTED) == sorted(checks)


def test_the_real_passes(checks: dict[str, list[dict[str, Any]]]) -> None:
    """Initialize, ping, tools/list, concurrent SSE streams and DNS-rebinding protection pass."""
    assert {name: [] for name in PASSING} == {name: _failures(checks[name]) for name in PASSING}


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_outcome(checks: dict[str, list[dict[str, Any]]], scenario: str) -> None:
    """Each scenario passes or fails as the table says (a HOLLOW pass is a pass to the suite)."""
    seen, why = EXPECTED[scenario]
    expected = Seen.FAIL if Seen.FAIL == seen else Seen.PASS
    assert scenario in checks, f"{scenario} did not run"
    assert expected == _seen(checks[scenario]), (why, _failures(checks[scenario]))
