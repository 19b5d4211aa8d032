"""The claim statuses and decide modes of wire format v1 (docs/wire-format.md#the-claim).

The core reads these on every claim; keeping them apart from `claimwatch.models.claim` spares a
command that never validates an envelope the building of its pydantic model.
"""

from __future__ import annotations

from typing import Literal

Status = Literal["ok", "not_found", "forbidden", "unavailable", "error"]
#: Statuses that are evidence about the fact; the others only say the tool failed.
EVIDENCE_STATUSES = frozenset({"ok", "not_found"})
STATUSES = frozenset({"ok", "not_found", "forbidden", "unavailable", "error"})

#: When a claim asks its fact to be decided (the envelope's `decide` key): when the fact's
#: decision window closes (`window`, the default), or also at once, on what has arrived
#: (`on_arrival`; the window stays open and its close decides as usual).
Decide = Literal["window", "on_arrival"]
DECIDE_MODES = frozenset({"window", "on_arrival"})
