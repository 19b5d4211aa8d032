"""What one record of the claims topic led to at the claims edge."""

from __future__ import annotations

from dataclasses import dataclass, field

from claimwatch.core.alerts.entry import DetectorEntry
from claimwatch.core.claim import Claim
from claimwatch.core.step import Decided, Quarantined
from claimwatch.worker.outgoing import Handled


@dataclass(slots=True)
class ClaimsHandled(Handled):
    """What one input record led to: records to send, table writes, counters."""

    resolutions: list[tuple[bytes, bytes]] = field(default_factory=list)
    decided: list[Decided] = field(default_factory=list)
    #: the JSON of each decided record, in the same order (serialized once, here)
    bodies: list[bytes] = field(default_factory=list)
    claim: Claim | None = None
    #: the detectors' entry of each new decision, with its field (sent per field, batched)
    alerts: list[tuple[str, DetectorEntry]] = field(default_factory=list)
    #: (claim id, reason) of each claim dead-lettered with no decision to come (a bad
    #: signature, a conflicting duplicate, a claim over its fact's byte budget): its
    #: waiters are answered with the reason at once (see worker.claims.waiting). The claims
    #: of a quarantined fact are not here: its `rejected` decision lists them
    refused: list[tuple[str, str]] = field(default_factory=list)
    #: the facts set aside while handling this record (each logged once, counted)
    quarantined: list[Quarantined] = field(default_factory=list)
