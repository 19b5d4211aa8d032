"""Builders for the governance tests: the example policy, fake checks, gateway files, records.

`POLICY` is the example policy of the governance walkthrough as designed (design 43
section 1.2: `examples/governance/policy.yaml` ships it), so the unit tests of the stage
decide the walkthrough's requests without the example directory. The end-to-end tests run
the shipped files (`example_gateway`, `EXAMPLE_POLICY`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from claimwatch.client.facts import FactPages
from claimwatch.gateway.governance.checks import Argument, CallView, CheckFailed
from claimwatch.gateway.governance.targets import Mask
from claimwatch.wire.topics import TopicNames

from tests.support.claims import envelope
from tests.support.gateway import stdio_server
from tests.support.kafka import TopicReader, publish_claims
from tests.support.paths import REPO

EXAMPLE: Final = REPO / "examples" / "governance"
EXAMPLE_GATEWAY: Final = EXAMPLE / "gateway.yaml"
EXAMPLE_POLICY: Final = EXAMPLE / "policy.yaml"
#: The example upstream, as the example's gateway file runs it.
SERVER_COMMAND: Final = ["python", str(EXAMPLE / "server.py")]

POLICY: Final = """\
policy_version: governance-demo-1
defaults: {settle: 0s}
sources:
  security-team: {authority: system_of_record, lineage: security}
  allowlist-bot: {authority: derived, lineage: allowlist}
fields:
  trust: {type: enum, values: [trusted, untrusted, suspicious], freshness: 30d}
argumentation:
  semantics: grounded
  timeout: 2s
  remember: 10m
  expected_checks:
    web_content:      [opa_pii, pii, trust_domain]
    record_read:      [opa_pii, opa_research, pii]
    statement_export: [opa_financial, opa_research]
    outbound_message: [pii]
  attack_rules:
    - {attacker_kind: pii_detected,         attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: pii_critical,         attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: phi_detected,         attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: financial_restricted, attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: financial_masking,    attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: suspicious_domain,    attacked_kind: baseline_allow,       type: undercut}
    - {attacker_kind: trusted_domain,       attacked_kind: pii_detected,         type: undermine}
    - {attacker_kind: research_authorized,  attacked_kind: phi_detected,         type: undercut}
    - {attacker_kind: financial_restricted, attacked_kind: research_authorized,  type: rebut}
    - {attacker_kind: research_authorized,  attacked_kind: financial_restricted, type: rebut}
"""


def write_policy(directory: Path, text: str = POLICY) -> Path:
    path = directory / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- the rows


def arg(
    kind: str, decision: str, strength: float, claim: str = "", mask: Mask | None = None
) -> Argument:
    """An argument as a check gives it (claim defaults to its kind)."""
    return Argument(kind, claim or kind, strength, decision, mask or Mask())  # type: ignore[arg-type]


@dataclass(frozen=True)
class Row:
    """One example request of design 43 section 1.6: its type, arguments and decision."""

    name: str
    request_type: str
    arguments: Mapping[str, Argument]
    decision: str
    accepted: Sequence[str] = field(default_factory=tuple)


BASELINE = arg("baseline_allow", "allow", 0.3)
PII_MASK = arg("pii_detected", "modify", 0.6)
ROWS: Final = (
    Row(
        "trusted",
        "web_content",
        {"opa_pii": BASELINE, "pii": PII_MASK, "trust_domain": arg("trusted_domain", "allow", 0.8)},
        "allow",
        ("opa_pii", "trust_domain"),
    ),
    Row(
        "untrusted",
        "web_content",
        {"opa_pii": BASELINE, "pii": PII_MASK, "trust_domain": arg("trust_unknown", "allow", 0.0)},
        "modify",
        ("pii", "trust_domain"),
    ),
    Row(
        "research",
        "record_read",
        {
            "opa_pii": arg("phi_detected", "deny", 0.9),
            "opa_research": arg("research_authorized", "allow", 0.7),
            "pii": PII_MASK,
        },
        "modify",
        ("opa_research", "pii"),
    ),
    Row(
        "marketing",
        "record_read",
        {"opa_pii": arg("phi_detected", "deny", 0.9), "opa_research": BASELINE, "pii": PII_MASK},
        "deny",
        ("opa_pii", "pii"),
    ),
    Row(
        "export_research",
        "statement_export",
        {
            "opa_financial": arg("financial_restricted", "deny", 0.8),
            "opa_research": arg("research_authorized", "allow", 0.7),
        },
        "undecided",
        (),
    ),
    Row(
        "export_audit",
        "statement_export",
        {"opa_financial": arg("financial_masking", "modify", 0.6), "opa_research": BASELINE},
        "modify",
        ("opa_financial",),
    ),
    Row(
        "opa_down",
        "web_content",
        {"pii": PII_MASK, "trust_domain": arg("trusted_domain", "allow", 0.8)},
        "undecided",
        ("trust_domain",),
    ),
)


# ---------------------------------------------------------------------------- fake checks


class FakeCheck:
    """A check that argues `argument` (or fails with `error`) after `delay` seconds."""

    def __init__(
        self,
        name: str,
        argument: Argument | None = None,
        *,
        error: BaseException | None = None,
        delay: float = 0.0,
        timeout_s: float = 1.0,
    ) -> None:
        self.name, self.argument, self.error = name, argument, error
        self.delay, self.timeout_s = delay, timeout_s
        self.calls: list[CallView] = []
        self.closed = False

    async def argue(self, call: CallView) -> Argument:
        self.calls.append(call)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        if self.argument is None:
            raise CheckFailed("no argument configured")
        return self.argument

    async def aclose(self) -> None:
        self.closed = True


# ---------------------------------------------------------------------------- end to end


def governed_gateway(
    path: Path,
    *,
    opa_url: str,
    worker_url: str,
    bootstrap: str,
    prefix: str,
    policy: Path = EXAMPLE_POLICY,
    tools: Mapping[str, Any] | None = None,
) -> Path:
    """The example's gateway file, its server run from the repository, pointed at this run.

    `tools` are added to (or replace) the example's; everything else is the example's.
    """
    document = yaml.safe_load(EXAMPLE_GATEWAY.read_text(encoding="utf-8"))
    document.update(worker_url=worker_url, bootstrap=bootstrap, topic_prefix=prefix)
    document["servers"] = {"records": stdio_server(SERVER_COMMAND)}
    document["governance"]["policy"] = str(policy)
    document["governance"]["opa"]["url"] = opa_url
    document["tools"] = {**document["tools"], **(tools or {})}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


async def publish_trust(
    bootstrap: str,
    prefix: str,
    worker_url: str,
    facts: Mapping[str, str],
    *,
    source: str = "security-team",
    within: float = 30.0,
) -> None:
    """Claim `trust` of each subject from `source`; return once the worker has resolved each."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    claims = [
        envelope(
            f"trust-{subject}-{value}",
            source,
            value,
            subject=subject,
            field="trust",
            observed_at=now,
        )
        for subject, value in facts.items()
    ]
    await publish_claims(bootstrap, prefix, claims)
    deadline = time.monotonic() + within
    pending = dict(facts)
    async with FactPages(worker_url) as pages:
        while pending:
            for subject, value in list(pending.items()):
                answer = await pages.ask(subject, "trust")
                if answer.status == 200 and (answer.decision or {}).get("value") == value:
                    del pending[subject]
            if pending and time.monotonic() > deadline:
                raise AssertionError(f"trust facts not resolved within {within:.0f}s: {pending}")
            await asyncio.sleep(0.3)


async def recorded_verdict(
    bootstrap: str, names: TopicNames, request_id: str, within: float = 15.0
) -> dict[str, Any]:
    """The worker's decision of `request_id` on `<prefix>verdicts.decisions`."""
    async with TopicReader(bootstrap, names.verdicts_decisions) as reader:
        records = await reader.wait_for(
            lambda rs: any(r.key == request_id.encode() for r in rs),
            within,
            f"the decision of {request_id}",
        )
    found: dict[str, Any] = next(r.json() for r in records if r.key == request_id.encode())
    return found
