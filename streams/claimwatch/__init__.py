"""claimwatch: a streaming conflict monitor for AI-agent tool results.

The public API, importable from here (`from claimwatch import Client`):

- agents: `Client` and `decide` (publish claims, wait for their decisions), `Publisher`,
  `validate`, and what they raise (`InvalidClaim`, `ClaimRefused`, `DecisionTimeout`,
  `WorkerBusy`, `WorkerUnavailable`, `BrokerUnavailable`, `MissingTopic`);
- policies: `load_policy`, `CompiledPolicy`, `PolicyError`;
- offline: `resolve`, `replay` and `explain` (no Kafka, no worker);
- the records on the wire, as pydantic models: `ClaimEnvelope`, `DecisionRecord`,
  `AlertRecord`, `Policy`, `PlanRecord`, `StepStatusRecord`, `VerdictSignal`,
  `VerdictDecision`, `PublishRequest`, `PublishResult`.

Each name is imported on first use, so `import claimwatch` (and every command of the CLI,
which lives in this package) does not pay for the Kafka client or pydantic until asked.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_HOMES: dict[str, str] = {
    "Client": "claimwatch.client.client",
    "decide": "claimwatch.client.client",
    "DecisionTimeout": "claimwatch.client.client",
    "ClaimRefused": "claimwatch.client.facts",
    "WorkerBusy": "claimwatch.client.facts",
    "WorkerUnavailable": "claimwatch.client.facts",
    "BrokerUnavailable": "claimwatch.wire.topics",
    "MissingTopic": "claimwatch.wire.topics",
    "Publisher": "claimwatch.client.publisher",
    "InvalidClaim": "claimwatch.client.publisher",
    "validate": "claimwatch.client.publisher",
    "load_policy": "claimwatch.policy.loading",
    "PolicyError": "claimwatch.policy.source",
    "CompiledPolicy": "claimwatch.core.policy",
    "resolve": "claimwatch.audit.offline",
    "Resolved": "claimwatch.audit.offline",
    "replay": "claimwatch.audit.offline",
    "Replayed": "claimwatch.audit.replay",
    "explain": "claimwatch.audit.explain",
    "ClaimEnvelope": "claimwatch.models.claim",
    "DecisionRecord": "claimwatch.models.decision",
    "AlertRecord": "claimwatch.models.alert",
    "Policy": "claimwatch.models.policy",
    "PlanRecord": "claimwatch.models.plan",
    "StepStatusRecord": "claimwatch.models.plan",
    "VerdictSignal": "claimwatch.models.verdict",
    "VerdictDecision": "claimwatch.models.verdict",
    "PublishRequest": "claimwatch.models.publish",
    "PublishResult": "claimwatch.models.publish",
}

__all__ = [
    "AlertRecord",
    "BrokerUnavailable",
    "ClaimEnvelope",
    "ClaimRefused",
    "Client",
    "CompiledPolicy",
    "DecisionRecord",
    "DecisionTimeout",
    "InvalidClaim",
    "MissingTopic",
    "PlanRecord",
    "Policy",
    "PolicyError",
    "PublishRequest",
    "PublishResult",
    "Publisher",
    "Replayed",
    "Resolved",
    "StepStatusRecord",
    "VerdictDecision",
    "VerdictSignal",
    "WorkerBusy",
    "WorkerUnavailable",
    "__version__",
    "decide",
    "explain",
    "load_policy",
    "replay",
    "resolve",
    "validate",
]

if TYPE_CHECKING:
    from claimwatch.audit.explain import explain
    from claimwatch.audit.offline import Resolved, replay, resolve
    from claimwatch.audit.replay import Replayed
    from claimwatch.client.client import Client, DecisionTimeout, decide
    from claimwatch.client.facts import ClaimRefused, WorkerBusy, WorkerUnavailable
    from claimwatch.client.publisher import InvalidClaim, Publisher, validate
    from claimwatch.core.policy import CompiledPolicy
    from claimwatch.models.alert import AlertRecord
    from claimwatch.models.claim import ClaimEnvelope
    from claimwatch.models.decision import DecisionRecord
    from claimwatch.models.plan import PlanRecord, StepStatusRecord
    from claimwatch.models.policy import Policy
    from claimwatch.models.publish import PublishRequest, PublishResult
    from claimwatch.models.verdict import VerdictDecision, VerdictSignal
    from claimwatch.policy.loading import load_policy
    from claimwatch.policy.source import PolicyError
    from claimwatch.wire.topics import BrokerUnavailable, MissingTopic


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'claimwatch' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
