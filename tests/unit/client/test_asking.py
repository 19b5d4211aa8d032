"""`asking`: the `decide` mode `Client.decide` and `claimwatch publish --decide` give claims."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from claimwatch.audit.resolve_file import LineError
from claimwatch.cli.publish import check_line
from claimwatch.client.publisher import InvalidClaim, asking, validate
from claimwatch.models.claim import ClaimEnvelope, Decide

from tests.support.claims import envelope

CLAIM = envelope("c-1", "billing-api", "paid")


@pytest.mark.parametrize(
    ("sent", "mode", "expected"),
    [
        ({}, "on_arrival", "on_arrival"),
        ({}, "window", "window"),
        ({}, None, None),
        ({"decide": None}, "on_arrival", "on_arrival"),
        ({"decide": "window"}, "on_arrival", "window"),
        ({"decide": "on_arrival"}, None, "on_arrival"),
        ({"signature": "ab" * 32}, "on_arrival", None),  # a key added would break it
    ],
)
def test_a_claim_keeps_its_own_mode_and_gets_the_asked_one_otherwise(
    sent: dict[str, Any], mode: Decide | None, expected: str | None
) -> None:
    """As a mapping and as a model: the claim's own `decide` wins; else the one asked."""
    claim = {**CLAIM, **sent}
    as_dict = orjson.loads(validate(asking(claim, mode))[1]).get("decide")
    model = ClaimEnvelope.model_validate(claim)
    as_model = orjson.loads(validate(asking(model, mode))[1]).get("decide")
    assert (expected, expected) == (as_dict, as_model)


def test_a_wrong_mode_is_refused_before_sending() -> None:
    """The publisher refuses a `decide` the worker would reject, naming the key."""
    with pytest.raises(InvalidClaim, match=r"^decide: "):
        validate({**CLAIM, "decide": "soon"})


def test_publish_fills_the_mode_of_each_line_without_one() -> None:
    """`claimwatch publish --decide on_arrival`: a line's own mode is kept."""
    plain = check_line(orjson.dumps(CLAIM), "claims.jsonl", 1, decide="on_arrival")
    own = orjson.dumps({**CLAIM, "decide": "window"})
    kept = check_line(own, "claims.jsonl", 2, decide="on_arrival")
    wrong = check_line(orjson.dumps({**CLAIM, "decide": 1}), "claims.jsonl", 3)
    assert not isinstance(plain, LineError) and not isinstance(kept, LineError)
    assert ("on_arrival", "window") == (
        orjson.loads(plain[1])["decide"],
        orjson.loads(kept[1])["decide"],
    )
    assert isinstance(wrong, LineError) and ("decide", 3) == (wrong.key, wrong.line)
