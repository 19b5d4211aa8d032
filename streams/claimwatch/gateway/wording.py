"""The one text block a model reads beside an arbitrated result: short, plain, actionable.

    conflict on invoice:INV-2 balance: billing-api@us-east-1 says 1250.00 USD,
    billing-api@eu-west-1 says 1180.00 USD; escalate — do not act on this value

Written from the `claimwatch` note alone (`claimwatch.gateway.notes`), so what the model
reads and what a program reads in `structuredContent` never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from claimwatch.gateway.notes import CLAIM_STATES

#: What each action tells the model to do.
ACTIONS: Final = {
    "proceed": "proceed — the value may be acted on",
    "degrade": "degrade — answer without relying on this value",
    "escalate": "escalate — do not act on this value",
}
#: The longest value or reason shown (characters); the structured note has them whole.
MAX_SHOWN: Final = 120


def shown(value: Any) -> str:
    """A value as a person writes it: text bare, an amount with its currency, else JSON."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping) and {"amount", "currency"} <= value.keys():
        text = f"{value['amount']} {value['currency']}"
    else:
        text = orjson.dumps(value).decode()
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _claim_value(claim: Mapping[str, Any]) -> str:
    if claim.get("status") == "not_found":
        return "not found"
    return shown(claim["value"]) if "value" in claim else f"nothing ({claim.get('status')})"


def text_block(note: Mapping[str, Any]) -> str:
    """The sentence of a `claimwatch` note, decided or not."""
    subject = note.get("subject")
    fact = f"{subject} {note.get('field')}" if subject else str(note.get("field"))
    if not note.get("arbitrated"):
        state = CLAIM_STATES.get(str(note.get("claim")), str(note.get("claim")))
        return (
            f"unarbitrated result for {fact}: {_short(note.get('reason'))}; {state}; "
            "treat it as unchecked"
        )
    outcome, action = note.get("outcome"), ACTIONS.get(str(note.get("action")), "")
    claims = note.get("claims") or []
    if outcome == "resolved":
        winner = next((c for c in claims if c.get("disposition") == "won"), None)
        value = "not found" if note.get("exists") is False else shown(note.get("value"))
        source = f", from {winner.get('source')}" if winner is not None else ""
        return f"resolved {fact}: {value}{source}; {action}"
    if outcome == "conflict":
        competing = [c for c in claims if c.get("disposition") in ("contradicting", "won")]
        says = ", ".join(f"{c.get('source')} says {_claim_value(c)}" for c in competing)
        return f"conflict on {fact}: {says or _short(note.get('reason'))}; {action}"
    return f"{outcome} on {fact}: {_short(note.get('reason'))}; {action}"


def _short(text: Any) -> str:
    words = str(text)
    return words if len(words) <= MAX_SHOWN else words[: MAX_SHOWN - 1] + "…"
