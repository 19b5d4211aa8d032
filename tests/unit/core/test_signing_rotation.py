"""Which sources must sign (regions, exact ids, bare names) and keys chosen by `kid`."""

from __future__ import annotations

from functools import partial
from typing import Any

import orjson
import pytest
from claimwatch.audit.resolve_file import read_claims
from claimwatch.client.publisher import validate
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.signing import canonical_bytes, signature_problem, signed
from claimwatch.models.policy import Policy

from tests.support.claims import envelope

OLD = b"o" * 32
NEW = b"n" * 32
EU = b"e" * 32

billing_claim = partial(envelope, claim_id="b1", value="paid", observed_at="2026-09-14T09:00:00Z")


def compiled(signing: dict[str, Any], keys: dict[str, Any], **extra: Any) -> CompiledPolicy:
    """A policy whose registry names billing-api (bare) as a system of record."""
    policy = Policy.model_validate(
        {
            "policy_version": "sig-rules-1",
            "sources": {"billing-api": {"authority": "system_of_record"}, **extra},
            "signing": signing,
        }
    )
    return CompiledPolicy(policy, keys)


def test_exact_id_signing_covers_the_other_regions_of_a_shared_registry_entry() -> None:
    """Issue 40 item 6: signing `billing-api@eu` no longer lets `billing-api@us` in unsigned.

    Both regions are the one registry entry `billing-api` (system_of_record); the region
    without a key of its own is refused, with a reason saying what to sign.
    """
    policy = compiled({"billing-api@eu": {"env": "K"}}, {"billing-api@eu": EU})
    us = signature_problem(policy, billing_claim(source="billing-api@us"))
    bare = signature_problem(policy, billing_claim(source="billing-api"))
    assert str(us).startswith("bad_signature: no key covers source 'billing-api@us'")
    assert "sign 'billing-api' (every region)" in str(us)
    assert str(bare).startswith("bad_signature: no key covers source 'billing-api'")
    assert None is signature_problem(policy, signed(billing_claim(source="billing-api@eu"), EU))


def test_a_region_registered_on_its_own_is_not_drawn_in() -> None:
    """`billing-api@us` with its own registry entry is another source: it need not sign."""
    policy = compiled(
        {"billing-api@eu": {"env": "K"}},
        {"billing-api@eu": EU},
        **{"billing-api@us": {"authority": "cached"}, "billing-api@eu": {}},
    )
    assert None is signature_problem(policy, billing_claim(source="billing-api@us"))


@pytest.mark.parametrize("source", ["billing-api", "billing-api@us", "billing-api@eu-west-1"])
def test_a_bare_name_covers_every_region(source: str) -> None:
    """`signing: billing-api` makes each region sign, with the bare name's keys."""
    policy = compiled({"billing-api": {"env": "K"}}, {"billing-api": OLD})
    assert "missing `signature`" in str(signature_problem(policy, billing_claim(source=source)))
    assert None is signature_problem(policy, signed(billing_claim(source=source), OLD))


def test_an_exact_id_keys_take_precedence_over_the_bare_name() -> None:
    """`billing-api@eu` has its own key; the bare name's key does not check its claims."""
    policy = compiled(
        {"billing-api": {"env": "K"}, "billing-api@eu": {"env": "E"}},
        {"billing-api": OLD, "billing-api@eu": EU},
    )
    eu = billing_claim(source="billing-api@eu")
    assert None is signature_problem(policy, signed(eu, EU))
    assert "does not match" in str(signature_problem(policy, signed(eu, OLD)))
    assert None is signature_problem(policy, signed(billing_claim(source="billing-api@us"), OLD))


def rotating() -> CompiledPolicy:
    """billing-api during a rotation: the key without kid (old) and kid 2026-12 (new)."""
    keys = [{"env": "OLD"}, {"kid": "2026-12", "env": "NEW"}]
    return compiled({"billing-api": {"keys": keys}}, {"billing-api": {None: OLD, "2026-12": NEW}})


@pytest.mark.parametrize(
    ("claim", "problem"),
    [
        (signed(billing_claim(source="billing-api"), OLD), None),
        (signed(billing_claim(source="billing-api"), NEW, "2026-12"), None),
        (signed(billing_claim(source="billing-api"), OLD, "2026-12"), "does not match"),
        (signed(billing_claim(source="billing-api"), NEW), "does not match"),
        (
            signed(billing_claim(source="billing-api"), NEW, "2027-03"),
            "unknown kid '2027-03' (known: '2026-12')",
        ),
        ({**billing_claim(source="billing-api"), "kid": 7}, "`kid` must be a string"),
    ],
    ids=["old-no-kid", "new-kid", "old-key-new-kid", "new-key-no-kid", "unknown-kid", "kid-int"],
)
def test_during_a_rotation_old_and_new_keys_are_accepted_by_kid(
    claim: dict[str, Any], problem: str | None
) -> None:
    """No flag day: claims under either key verify; the key is picked by `kid`."""
    found = signature_problem(rotating(), claim)
    if problem is None:
        assert None is found
    else:
        assert problem in str(found) and str(found).startswith("bad_signature: ")


def test_a_source_with_named_keys_only_refuses_a_claim_without_kid() -> None:
    """After the rotation (old key gone) a claim with no `kid` names no key."""
    policy = compiled(
        {"billing-api": {"env": "NEW", "kid": "2026-12"}}, {"billing-api": {"2026-12": NEW}}
    )
    problem = signature_problem(policy, signed(billing_claim(source="billing-api"), NEW))
    assert "bad_signature: no `kid`: the source signs with named keys only ('2026-12')" in str(
        problem
    )


def test_the_signature_covers_the_kid() -> None:
    """Swapping the kid of a signed claim breaks its signature (the kid is signed over)."""
    good = signed(billing_claim(source="billing-api"), NEW, "2026-12")
    assert b'"kid":"2026-12"' in canonical_bytes(good)
    swapped = {**good, "kid": "other"}
    policy = compiled(
        {"billing-api": {"keys": [{"kid": "2026-12", "env": "A"}, {"kid": "other", "env": "B"}]}},
        {"billing-api": {"2026-12": NEW, "other": NEW}},
    )
    assert None is signature_problem(policy, good)
    assert "does not match" in str(signature_problem(policy, swapped))


def test_the_publisher_sends_the_kid_it_signs_with() -> None:
    """`validate(claim, key, kid)` writes `kid` into the claim and signs over it."""
    _, value = validate(billing_claim(source="billing-api"), NEW, "2026-12")
    sent = orjson.loads(value)
    assert "2026-12" == sent["kid"]
    assert None is signature_problem(rotating(), sent)


def test_offline_resolve_picks_the_key_by_kid_too() -> None:
    """`claimwatch resolve` refuses the unknown kid and decides the rotated claims."""
    lines = [
        orjson.dumps(signed(billing_claim(claim_id="a", source="billing-api"), OLD)),
        orjson.dumps(signed(billing_claim(claim_id="b", source="billing-api"), NEW, "2026-12")),
        orjson.dumps(signed(billing_claim(claim_id="c", source="billing-api"), NEW, "nope")),
    ]
    batch = read_claims(lines, "claims.jsonl", rotating())
    assert [(3, "signature")] == [(e.line, e.key) for e in batch.errors]
    assert 2 == batch.claims
