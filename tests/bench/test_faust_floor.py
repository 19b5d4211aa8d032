"""What the Faust floor sends per claim: its decider's own records, or the padded claim."""

from __future__ import annotations

import pytest

from bench.faust_floor import _body

CLAIM = b'{"claim_id":"c-1"}'
DECISION, CHANGELOG = b'{"decision_id":"dec_1"}', b'[{"claim_id":"c-1"}]'


@pytest.mark.parametrize(
    ("topic", "made", "expected"),
    [
        ("p.pt.decisions", [DECISION, DECISION, CHANGELOG], DECISION),
        ("p.pt.resolutions", [DECISION, DECISION, CHANGELOG], DECISION),
        ("p.pt.facts-changelog", [DECISION, DECISION, CHANGELOG], CHANGELOG),
        ("p.pt.conflicts", [DECISION, DECISION, CHANGELOG], CLAIM + b" " * 12),
        ("p.pt.decisions", None, CLAIM + b" " * 12),
        ("p.pt.decisions", [], CLAIM + b" " * 12),
        ("p.pt.verdicts.decisions", [DECISION, DECISION, CHANGELOG], CLAIM + b" " * 12),
        ("p.pt.plan-facts-changelog", [DECISION, DECISION, CHANGELOG], CLAIM + b" " * 12),
        ("p.pt.facts-changelog", None, CLAIM + b" " * 12),
    ],
)
def test_a_claim_sends_its_deciders_record_or_the_padded_claim(
    topic: str, made: list[bytes] | None, expected: bytes
) -> None:
    """The decider's decision and changelog go where the worker's go; the rest is padding."""
    assert expected == _body(topic, CLAIM, 30, made, b"k", {})


def test_an_unchanged_decision_sends_the_facts_last_one() -> None:
    """A claim that leaves its fact's decision as it was sends the decision the fact holds."""
    last: dict[bytes, bytes] = {}
    _body("p.pt.decisions", CLAIM, 30, [DECISION, DECISION, CHANGELOG], b"k", last)

    assert DECISION == _body("p.pt.resolutions", CLAIM, 30, [CHANGELOG], b"k", last)
