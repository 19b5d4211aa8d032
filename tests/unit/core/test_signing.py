"""Signed claims: canonical bytes, HMAC check, policy keys from env/files, the publisher."""

from __future__ import annotations

import hashlib
import hmac
from functools import partial
from pathlib import Path

import orjson
import pytest
from claimwatch.audit.resolve_file import read_claims
from claimwatch.client.publisher import InvalidClaim, Publisher, validate
from claimwatch.core.policy import CompiledPolicy
from claimwatch.core.signing import canonical_bytes, sign, signature_problem, signed, verify
from claimwatch.models.policy import Policy
from claimwatch.policy.loading import load_policy
from claimwatch.policy.signing_keys import client_key, client_kid, load_signing_keys
from claimwatch.policy.source import PolicyError

from tests.support.claims import envelope

KEY = b"ledger-secret-of-at-least-32-bytes"


#: the ledger's claim these tests sign (`ledger_claim(signature=...)` and so on for others)
ledger_claim = partial(
    envelope,
    claim_id="c1",
    source="ledger@eu",
    value={"status": "paid", "note": "é ✓"},
    observed_at="2026-09-14T09:00:00Z",
)


def signing_policy(keys: dict[str, bytes] | None = None) -> CompiledPolicy:
    """A policy that requires the ledger (any region) to sign."""
    policy = Policy.model_validate(
        {"policy_version": "s-1", "signing": {"ledger": {"env": "LEDGER_KEY"}}}
    )
    return CompiledPolicy(policy, {"ledger": KEY} if keys is None else keys)


def test_canonical_form_is_stable_under_key_order() -> None:
    """Keys sorted at every level: the insertion order of the JSON object does not matter."""
    one = ledger_claim()
    other = dict(reversed(list(one.items())))
    other["value"] = {"note": "é ✓", "status": "paid"}
    assert canonical_bytes(one) == canonical_bytes(other)
    assert sign(one, KEY) == sign(other, KEY)


def test_canonical_form_is_compact_sorted_utf8_without_signature() -> None:
    """The documented bytes: no signature key, no spaces, sorted keys, raw UTF-8."""
    claim = {"b": 1, "a": {"z": "é", "y": [1, 2]}, "signature": "00" * 32}
    assert '{"a":{"y":[1,2],"z":"é"},"b":1}'.encode() == canonical_bytes(claim)


def test_signature_is_hmac_sha256_hex_of_the_canonical_bytes() -> None:
    """Any HMAC-SHA256 implementation over the canonical bytes gives the same signature."""
    expected = hmac.new(KEY, canonical_bytes(ledger_claim()), hashlib.sha256).hexdigest()
    assert expected == sign(ledger_claim(), KEY)


def test_valid_signature_verifies_and_survives_a_json_round_trip() -> None:
    """A signed claim sent as JSON and decoded again still verifies."""
    claim = orjson.loads(orjson.dumps(signed(ledger_claim(), KEY)))
    assert None is verify(claim, KEY)


def test_changed_value_invalidates_the_signature() -> None:
    """Replaying a signed claim with another value (same signature) does not verify."""
    claim = signed(ledger_claim(), KEY)
    forged = {**claim, "value": {"status": "unpaid", "note": "é ✓"}}
    assert "does not match" in str(verify(forged, KEY))


def test_wrong_key_missing_and_malformed_signatures_are_refused() -> None:
    """Each broken signature gets its own reason."""
    assert "does not match" in str(verify(signed(ledger_claim(), b"other"), KEY))
    assert "missing `signature`" == verify(ledger_claim(), KEY)
    assert "64 hex" in str(verify(ledger_claim(signature="zz" * 32), KEY))
    assert "64 hex" in str(verify(ledger_claim(signature=12), KEY))


def test_only_sources_named_in_signing_must_sign() -> None:
    """The registry rule: exact id, then the service part; others pass unsigned."""
    policy = signing_policy()
    assert None is signature_problem(policy, ledger_claim(source="reporting"))
    assert None is signature_problem(policy, signed(ledger_claim(), KEY))
    problem = signature_problem(policy, ledger_claim())
    assert str(problem).startswith("bad_signature: missing `signature`")


def test_a_policy_compiled_without_keys_refuses_signed_sources() -> None:
    """Fail closed: no key loaded means no claim of that source is accepted."""
    problem = signature_problem(signing_policy({}), signed(ledger_claim(), KEY))
    assert "bad_signature: no key is loaded for signing source 'ledger'" == problem


def write(tmp_path: Path, text: str) -> Path:
    """A policy file in tmp_path."""
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_literal_key_in_the_policy_is_an_error_naming_file_line_and_key(tmp_path: Path) -> None:
    """A key written into the policy is refused, at the line where it stands."""
    path = write(tmp_path, "policy_version: p\nsigning:\n  ledger:\n    key: s3cret\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (4, "signing.ledger.key") == (caught.value.line, caught.value.key)
    assert "never written in the policy" in caught.value.reason


def test_literal_key_as_the_entry_value_is_refused(tmp_path: Path) -> None:
    """`ledger: s3cret` (a string where the key's location belongs) is refused too."""
    path = write(tmp_path, "policy_version: p\nsigning:\n  ledger: s3cret\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (3, "signing.ledger") == (caught.value.line, caught.value.key)
    assert "never written in the policy" in caught.value.reason


def test_unset_environment_variable_is_a_policy_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variable's name, the file, the line and the key are in the message."""
    monkeypatch.delenv("CW_TEST_UNSET_KEY", raising=False)
    path = write(tmp_path, "policy_version: p\nsigning:\n  ledger: {env: CW_TEST_UNSET_KEY}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert f"{path}:3: signing.ledger.env: environment variable CW_TEST_UNSET_KEY is not set" in (
        str(caught.value)
    )


def test_missing_key_file_is_a_policy_error(tmp_path: Path) -> None:
    """A relative key file is looked up beside the policy file; a missing one is named."""
    path = write(tmp_path, "policy_version: p\nsigning:\n  ledger:\n    file: keys/ledger.key\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (4, "signing.ledger.file") == (caught.value.line, caught.value.key)
    assert f"cannot read key file {tmp_path / 'keys/ledger.key'}" in caught.value.reason


def test_keys_load_from_env_and_files(tmp_path: Path) -> None:
    """Env values as UTF-8, file bytes without the trailing line break."""
    (tmp_path / "b.key").write_bytes(b"file-key-" + b"f" * 32 + b"\n")
    text = "policy_version: p\nsigning:\n  a: {env: A_KEY}\n  b: {file: b.key}\n"
    path = write(tmp_path, text)
    policy = Policy.model_validate(
        {"policy_version": "p", "signing": {"a": {"env": "A_KEY"}, "b": {"file": "b.key"}}}
    )
    keys = load_signing_keys(policy, path, text, {"A_KEY": "env-key-" + "e" * 32})
    assert {"a": {None: b"env-key-" + b"e" * 32}, "b": {None: b"file-key-" + b"f" * 32}} == keys


def test_publisher_validate_signs_what_it_sends() -> None:
    """The bytes sent carry a signature the worker's check accepts."""
    _, value = validate(ledger_claim(), KEY)
    sent = orjson.loads(value)
    assert None is signature_problem(signing_policy(), sent)
    _, unsigned = validate(ledger_claim())
    assert "signature" not in orjson.loads(unsigned)


def test_publisher_refuses_a_malformed_signature() -> None:
    """A claim carrying a signature that is not 64 hex characters is not sent."""
    with pytest.raises(InvalidClaim, match="signature"):
        validate(ledger_claim(signature="abc"))


def test_client_key_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """--sign-key-env and --sign-key-file: one of them, and it must hold a key."""
    monkeypatch.setenv("CW_PUB_KEY", "1" * 32)
    (tmp_path / "k").write_bytes(b"2" * 32 + b"\r\n")
    assert (b"1" * 32, b"2" * 32, None) == (
        client_key("CW_PUB_KEY", None),
        client_key(None, str(tmp_path / "k")),
        client_key(None, None),
    )
    with pytest.raises(ValueError, match="not both"):
        client_key("CW_PUB_KEY", str(tmp_path / "k"))
    monkeypatch.delenv("CW_PUB_KEY")
    with pytest.raises(ValueError, match="CW_PUB_KEY is not set"):
        client_key("CW_PUB_KEY", None)


def test_offline_resolve_refuses_badly_signed_lines_and_keeps_their_id_free() -> None:
    """`claimwatch resolve` applies the same check; a later good claim with the id is used."""
    forged = {**signed(ledger_claim(), KEY), "value": {"status": "unpaid"}}
    good = signed(ledger_claim(), KEY)
    lines = [orjson.dumps(ledger_claim()), orjson.dumps(forged), orjson.dumps(good)]
    batch = read_claims(lines, "claims.jsonl", signing_policy())
    assert [(1, "signature"), (2, "signature")] == [(e.line, e.key) for e in batch.errors]
    assert 1 == batch.claims
    (fact,) = batch.facts
    assert good["signature"] == batch.claims_of(fact)[0].envelope["signature"]


def test_client_key_refuses_a_short_key_and_kid_checks_its_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A publisher's key needs 32 bytes; `--sign-kid` needs a key and a policy kid's form."""
    monkeypatch.setenv("CW_PUB_SHORT", "k" * 31)
    with pytest.raises(ValueError, match="--sign-key-env: the key in environment variable "):
        client_key("CW_PUB_SHORT", None)
    assert "2026-12" == client_kid("2026-12", KEY)
    assert None is client_kid(None, None)
    with pytest.raises(ValueError, match="give the key too"):
        client_kid("2026-12", None)
    with pytest.raises(ValueError, match="is not a key id"):
        client_kid("two words", KEY)
    with pytest.raises(ValueError, match="at least 32"):
        Publisher(signing_key=b"short")
