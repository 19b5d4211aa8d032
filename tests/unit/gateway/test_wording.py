"""The sentence a model reads beside an arbitrated result, one per kind of note."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.notes import unarbitrated_note
from claimwatch.gateway.wording import shown, text_block


def note(outcome: str, action: str, claims: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "arbitrated": True,
        "subject": "invoice:INV-2",
        "field": "balance",
        "outcome": outcome,
        "action": action,
        "reason": "two systems of record disagree",
        "claims": claims,
        **extra,
    }


USD = {"amount": "1250.00", "currency": "USD"}
EUR = {"amount": "1180.00", "currency": "USD"}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            note(
                "conflict",
                "escalate",
                [
                    {
                        "source": "billing-api@us-east-1",
                        "value": USD,
                        "disposition": "contradicting",
                    },
                    {
                        "source": "billing-api@eu-west-1",
                        "value": EUR,
                        "disposition": "contradicting",
                    },
                    {"source": "user", "value": "0", "disposition": "outranked"},
                ],
            ),
            "conflict on invoice:INV-2 balance: billing-api@us-east-1 says 1250.00 USD, "
            "billing-api@eu-west-1 says 1180.00 USD; escalate — do not act on this value",
        ),
        (
            note(
                "conflict",
                "escalate",
                [
                    {"source": "a", "value": 3, "disposition": "contradicting"},
                    {"source": "b", "status": "not_found", "disposition": "contradicting"},
                ],
            ),
            "conflict on invoice:INV-2 balance: a says 3, b says not found; "
            "escalate — do not act on this value",
        ),
        (
            note(
                "resolved",
                "proceed",
                [{"source": "billing-api", "value": "paid", "disposition": "won"}],
                value="paid",
            ),
            "resolved invoice:INV-2 balance: paid, from billing-api; "
            "proceed — the value may be acted on",
        ),
        (
            note("resolved", "escalate", [{"source": "s", "disposition": "won"}], exists=False),
            "resolved invoice:INV-2 balance: not found, from s; "
            "escalate — do not act on this value",
        ),
        (
            note("insufficient", "degrade", []),
            "insufficient on invoice:INV-2 balance: two systems of record disagree; "
            "degrade — answer without relying on this value",
        ),
        (
            unarbitrated_note("invoice:INV-2", "balance", "c1", "no worker at http://x", "queued"),
            "unarbitrated result for invoice:INV-2 balance: no worker at http://x; its claim is "
            "kept and will be sent when the broker answers again; treat it as unchecked",
        ),
        (
            unarbitrated_note(None, "balance", None, "no `id` in the arguments", "not_made"),
            "unarbitrated result for balance: no `id` in the arguments; no claim could be "
            "made of it; treat it as unchecked",
        ),
    ],
)
def test_text_block(given: dict[str, Any], expected: str) -> None:
    assert expected == text_block(given)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("paid", "paid"),
        (12.5, "12.5"),
        (True, "true"),
        (None, "null"),
        ({"amount": "1.00", "currency": "EUR"}, "1.00 EUR"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        ("x" * 200, "x" * 119 + "…"),
    ],
)
def test_shown(value: Any, expected: str) -> None:
    assert expected == shown(value)
