"""Setting a fact aside: the reason and the `rejected` decision of a fact whose handling raised.

Whatever raised, this never does: the reason is made of plain strings and every part the
policy gives falls back to a plain default (see `decision.quarantine_record`).
"""

from __future__ import annotations

from typing import Any

from claimwatch.core.claim import Claim
from claimwatch.core.decision import action_for, quarantine_record
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.timeutil import format_rfc3339

#: Longest exception message a quarantine reason quotes.
MAX_ERROR_TEXT = 500


def internal_error(exc: BaseException) -> str:
    """`internal_error: <type>: <message>`, the message clipped; never raises."""
    try:
        message = str(exc)
    except Exception:  # an exception whose text cannot be made
        message = "<no message>"
    if len(message) > MAX_ERROR_TEXT:
        message = message[: MAX_ERROR_TEXT - 3] + "..."
    return f"internal_error: {type(exc).__name__}: {message}"


def set_aside(
    policy: CompiledPolicy, key: str, claims: list[Claim], exc: BaseException, at_us: int
) -> tuple[str, dict[str, Any]]:
    """The reason and the `rejected` decision of a fact whose handling raised `exc`.

    Never raises: every part the policy gives (the action, each source's class) falls back
    to a plain default when asking for it fails too (see `decision.quarantine_record`).
    """
    reason = internal_error(exc)
    subject, _, field_name = key.rpartition("|")
    try:
        action = action_for("rejected", None, policy.rule(field_name))
    except Exception:
        action = "escalate"
    views: dict[str, tuple[str, str]] = {}
    for claim in claims:
        try:
            view = policy.source_view(field_name, claim.source)
            views[claim.source] = (str(view.authority.value), view.lineage)
        except Exception:
            continue
    record = quarantine_record(
        policy.version, subject, field_name, claims, reason, _time_text(at_us), action, views
    )
    return reason, record


def _time_text(at_us: int) -> str:
    """A clock time as RFC 3339, or its number when it is beyond the calendar."""
    try:
        return format_rfc3339(at_us)
    except Exception:
        return str(at_us)
