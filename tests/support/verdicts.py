"""Verdict arguments and the verdict policy the tests share."""

from __future__ import annotations

from typing import Any

from streams.core.argue import VerdictArgument

BASELINE = VerdictArgument("baseline_allow", "opa", "baseline", "allowed by default", 0.3, "allow")


PII = VerdictArgument(
    "pii_moderate", "pii-scanner", "pii_detected", "2 e-mails: mask", 0.6, "modify"
)


POLICY: dict[str, Any] = {
    "policy_version": "verdicts-1",
    "argumentation": {
        "attack_rules": [
            {"attacker_kind": "pii_detected", "attacked_kind": "baseline", "type": "undercut"},
            {
                "attacker_kind": "trusted_domain",
                "attacked_kind": "pii_detected",
                "type": "undermine",
            },
        ],
        "expected_checks": {
            "upload": ["opa", "pii-scanner", "knowledge-hub"],
            "*": ["opa", "pii-scanner"],
        },
        "timeout": "5s",
        "remember": "60s",
    },
}
