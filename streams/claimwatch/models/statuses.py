"""The claim statuses of wire format v1 (docs/wire-format.md#the-claim), without the envelope model.

The core reads these on every claim; keeping them apart from `claimwatch.models.claim` spares a
command that never validates an envelope the building of its pydantic model.
"""

from __future__ import annotations

from typing import Literal

Status = Literal["ok", "not_found", "forbidden", "unavailable", "error"]
#: Statuses that are evidence about the fact; the others only say the tool failed.
EVIDENCE_STATUSES = frozenset({"ok", "not_found"})
STATUSES = frozenset({"ok", "not_found", "forbidden", "unavailable", "error"})
