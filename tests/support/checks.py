"""Builders for the governance checks' tests: calls as a check sees them, configs, sources."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from claimwatch.audit.resolve_file import read_claims, resolve_batch
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import parse_rfc3339
from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.governance.checks import Argument, CallView, CheckEnv
from claimwatch.gateway.governance.targets import Mask, argument_targets, result_targets
from claimwatch.policy.loading import parse_policy
from mcp.types import CallToolResult, TextContent

#: A gateway's check environment with the design's defaults (1 MiB of text per phase).
ENV = CheckEnv(GatewaySettings(), "http://127.0.0.1:8181", 0.5, 1_048_576)


def env(worker_url: str | None = None, max_scan_bytes: int = 1_048_576) -> CheckEnv:
    """A check environment asking the worker at `worker_url`."""
    return CheckEnv(GatewaySettings(worker_url=worker_url), ENV.opa_url, 0.5, max_scan_bytes)


def arguments_call(arguments: Mapping[str, Any], tool: str = "send_email") -> CallView:
    """The arguments phase of a call, with its targets."""
    return CallView(tool, "records", "arguments", arguments, None, argument_targets(arguments))


def result_call(
    result: CallToolResult,
    arguments: Mapping[str, Any] | None = None,
    tool: str = "fetch_page",
) -> CallView:
    """The result phase of a call, with its targets and unscannable blocks."""
    targets, unscannable = result_targets(result)
    return CallView(tool, "records", "result", arguments or {}, result, targets, unscannable)


def text_result(*texts: str, structured: Any = None) -> CallToolResult:
    """A result of text blocks (and structured content, when given)."""
    return CallToolResult(
        content=[TextContent(type="text", text=t) for t in texts], structured_content=structured
    )


def source_of(checks: Mapping[str, Any]) -> tuple[ConfigSource, dict[str, Any]]:
    """A gateway file holding `governance.checks`, and that section parsed (for lines)."""
    text = yaml.safe_dump({"governance": {"checks": dict(checks)}}, sort_keys=False)
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    return ConfigSource("gateway.yaml", text, root), yaml.safe_load(text)["governance"]["checks"]


#: A policy whose `trust` facts a team keeps: the security team is the system of record,
#: an audit team is one too (so the two can conflict), an allowlist bot derives.
TRUST_POLICY = """\
policy_version: trust-checks-1
defaults: {settle: 0s}
sources:
  security-team: {authority: system_of_record, lineage: security}
  security-audit: {authority: system_of_record, lineage: audit}
  allowlist-bot: {authority: derived, lineage: allowlist}
fields:
  trust: {type: enum, values: [trusted, untrusted, suspicious], freshness: 30d}
"""

#: The trust check of the design's example (`governance.checks.trust_domain`).
TRUST_DOMAIN: dict[str, Any] = {
    "kind": "trust",
    "subject": "domain:{url|host}",
    "field": "trust",
    "values": {
        "trusted": {"decision": "allow", "kind": "trusted_domain", "strength": 0.8},
        "suspicious": {"decision": "deny", "kind": "suspicious_domain", "strength": 0.7},
    },
    "otherwise": {"decision": "allow", "kind": "trust_unknown", "strength": 0.0},
    "timeout": "2s",
}


def trust_claim(
    claim_id: str, domain: str, source: str, value: str | None, *, status: str = "ok"
) -> dict[str, Any]:
    """A claim about `domain:<domain> trust`, observed at 2026-12-05T12:00:00Z."""
    claim: dict[str, Any] = {
        "claim_id": claim_id,
        "subject": f"domain:{domain}",
        "field": "trust",
        "source": source,
        "observed_at": "2026-12-05T12:00:00Z",
        "status": status,
    }
    if value is not None:
        claim["value"] = value
    return claim


def trust_decisions(
    claims: Iterable[Mapping[str, Any]], now: str = "2026-12-05T12:00:01Z"
) -> dict[str, dict[str, Any]]:
    """The core's decision of each fact of `claims` under TRUST_POLICY, by subject."""
    policy = CompiledPolicy(parse_policy(TRUST_POLICY, "trust-policy.yaml"))
    batch = read_claims([json.dumps(dict(c)) for c in claims], "<claims>", policy)
    assert [] == batch.errors
    return {r["subject"]: r for r in resolve_batch(batch, policy, parse_rfc3339(now))}


def arg(
    kind: str, decision: str, strength: float, claim: str = "", mask: Mask | None = None
) -> Argument:
    """An argument as a check gives it (claim defaults to its kind)."""
    return Argument(kind, claim or kind, strength, decision, mask or Mask())  # type: ignore[arg-type]


#: What a fake check argues unless told otherwise.
CLEAR = Argument("pii_clear", "nothing", 0.3, "allow")


@dataclass
class FakeCheck:
    """A check that argues `argument` (or raises `error`) after `delay_s` seconds.

    It keeps the calls it was asked about; two fakes are equal when they are configured
    alike.
    """

    name: str
    argument: Argument = CLEAR
    delay_s: float = 0.0
    error: BaseException | None = None
    timeout_s: float = 1.0
    calls: list[CallView] = field(default_factory=list, compare=False)

    async def argue(self, call: CallView) -> Argument:
        self.calls.append(call)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        return self.argument

    async def aclose(self) -> None:
        return None
