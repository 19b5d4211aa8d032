"""The governed side of the gateway bench: the same mapped tool with the governance stage on.

As docs/gateway-governance.md sets it up: the worker's policy is examples/mcp/policy.yaml
with the governance example's trust field, its `security-team` source and its
argumentation section (examples/governance/policy.yaml), plus the request type
`invoice_read` checked by the PII scan, the shipped PII pack (a real `opa run` on
examples/governance/packs) and a trust record (`domain:billing.example trust`, claimed
`trusted` by security-team before the run). The gateway's file is the bench's own plus a
`governance:` section and `get_invoice_status`'s `checks: {result: invoice_read}`.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import yaml
from claimwatch.client.client import Client as CwClient

from bench.children import Child

OPA = Path(".cache/go/bin/opa")
PACKS = Path("examples/governance/packs")
GOVERNANCE_POLICY = Path("examples/governance/policy.yaml")
GOVERNANCE_GATEWAY = Path("examples/governance/gateway.yaml")
REQUEST_TYPE = "invoice_read"
CHECKS = ("opa_pii", "pii", "trust_billing")
TRUST_SUBJECT = "domain:billing.example"


def governed_policy(base: Path, path: Path) -> Path:
    """`base` with the governance example's trust field, source and argumentation."""
    policy = yaml.safe_load(base.read_text())
    example = yaml.safe_load(GOVERNANCE_POLICY.read_text())
    policy["sources"] = {**policy["sources"], "security-team": example["sources"]["security-team"]}
    policy["fields"] = {**policy["fields"], "trust": example["fields"]["trust"]}
    # the example's own policy signs nothing; here the trust record's source is let in
    # unsigned knowingly, as the example's, while billing's claims stay signed
    policy["signing_exempt"] = [*policy.get("signing_exempt", []), "security-team"]
    argumentation = dict(example["argumentation"])
    argumentation["expected_checks"] = {REQUEST_TYPE: list(CHECKS)}
    policy["argumentation"] = argumentation
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


def governed_gateway(base: Path, policy: Path, opa_url: str, path: Path) -> Path:
    """The bench's gateway file (`base`) with the stage on for its mapped tool."""
    config = yaml.safe_load(base.read_text())
    example = yaml.safe_load(GOVERNANCE_GATEWAY.read_text())["governance"]
    checks = example["checks"]
    trust = {**checks["trust_domain"], "subject": TRUST_SUBJECT}
    governed = dict(config)
    governed["governance"] = {
        **{k: v for k, v in example.items() if k not in ("policy", "opa", "checks")},
        "policy": str(policy.resolve()),
        "opa": {"url": opa_url},
        "checks": {"pii": checks["pii"], "opa_pii": checks["opa_pii"], "trust_billing": trust},
    }
    governed["tools"] = {
        name: {**mapping, "checks": {"result": REQUEST_TYPE}}
        for name, mapping in config["tools"].items()
    }
    path.write_text(yaml.safe_dump(governed, sort_keys=False))
    return path


def opa_server(port: int, work: Path) -> Child:
    """The real OPA server with the shipped packs, as tests/support/opa.py starts it."""
    command = [
        str(OPA), "run", "--server", "--addr", f"127.0.0.1:{port}", "--disable-telemetry",
        "--log-level", "error", "--ignore", "*_test.rego", str(PACKS),
    ]  # fmt: skip
    return Child("opa", command, work / "opa.log")


async def trust_billing(claimwatch: CwClient) -> None:
    """security-team's record that the billing domain is trusted, decided before the run."""
    now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    claim = {
        "claim_id": f"trust-{uuid.uuid4().hex}",
        "subject": TRUST_SUBJECT,
        "field": "trust",
        "source": "security-team",
        "observed_at": now,
        "status": "ok",
        "value": "trusted",
    }
    await claimwatch.decide([claim], timeout=30.0)
