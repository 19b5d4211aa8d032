"""Verdict arguments and the verdict policy the tests share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from claimwatch.core.argue import VerdictArgument
from claimwatch.core.timeutil import format_rfc3339

BASELINE = VerdictArgument("baseline_allow", "opa", "baseline", "allowed by default", 0.3, "allow")


PII = VerdictArgument(
    "pii_moderate", "pii-scanner", "pii_detected", "2 e-mails: mask", 0.6, "modify"
)

TRUST = VerdictArgument(
    "knowledge_trust_0", "knowledge-hub", "trusted_domain", "trusted", 0.8, "allow"
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def signal_obj(
    argument: VerdictArgument, at_us: int, request: str = "req-1", **extra: Any
) -> dict[str, Any]:
    """The JSON of one check's signal for an upload request, observed at `at_us`."""
    return {
        "request_id": request,
        "request_type": "upload",
        "check": argument.check,
        "argument": argument.id,
        "kind": argument.kind,
        "claim": argument.claim,
        "strength": argument.strength,
        "decision": argument.decision,
        "observed_at": format_rfc3339(at_us),
        **extra,
    }


def many(count: int, kind: str = "noise", claim: str = "x") -> list[VerdictArgument]:
    """`count` distinct arguments of one kind, each its own check, all allowing."""
    return [VerdictArgument(f"a{i}", f"check-{i}", kind, claim, 0.5, "allow") for i in range(count)]


def signal_record(argument: VerdictArgument, at: datetime, request: str) -> tuple[bytes, bytes]:
    """One check's signal for an upload request, observed at `at`, as a (key, value) record."""
    at_us = (at - _EPOCH) // timedelta(microseconds=1)
    return request.encode(), orjson.dumps(signal_obj(argument, at_us, request))
