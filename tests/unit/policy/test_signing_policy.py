"""The `signing` section at load: what it must cover, exemptions, key ids and key length."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from claimwatch.policy.loading import load_policy, parse_policy
from claimwatch.policy.source import PolicyError

from tests.support.paths import REPO

HEAD = """\
policy_version: sig-load-1
sources:
  billing-api: {authority: system_of_record, lineage: ledger}
  reporting:   {authority: derived}
fields:
  payment_status: {type: enum, values: [paid, unpaid], owner: billing-api}
"""


def refusal(text: str) -> PolicyError:
    """The PolicyError that parsing `text` raises."""
    with pytest.raises(PolicyError) as caught:
        parse_policy(dedent(text), "p.yaml")
    return caught.value


@pytest.mark.parametrize(
    ("tail", "line", "key", "needle"),
    [
        (  # a system of record left unsigned
            "signing:\n  reporting: {env: K}\n",
            3,
            "sources.billing-api",
            "system of record 'billing-api' is not covered by `signing`",
        ),
        (  # issue 40 item 6: an exact id of a service whose regions share the bare entry
            "signing:\n  billing-api@eu: {env: K}\n",
            8,
            "signing.billing-api@eu",
            "shares the registry entry `sources.billing-api` with every other region",
        ),
        (  # a field's own system of record
            "  risk: {type: number, authority: {scorer: system_of_record}}\n"
            "signing:\n  billing-api: {env: K}\n",
            7,
            "fields.risk.authority.scorer",
            "the system of record of risk 'scorer' is not covered",
        ),
        (  # an owner outside the registry
            "  balance: {type: json, owner: treasury@eu}\nsigning:\n  billing-api: {env: K}\n",
            7,
            "fields.balance.owner",
            "the owner of balance 'treasury@eu' is not covered",
        ),
        (  # exempt and signed at once
            "signing:\n  billing-api: {env: K}\nsigning_exempt: [billing-api]\n",
            9,
            "signing_exempt.0",
            "'billing-api' is both signed (`signing`) and exempt from it",
        ),
    ],
    ids=["sor", "exact-region", "field-authority", "owner", "exempt-and-signed"],
)
def test_a_policy_leaving_a_deciding_source_unsigned_is_refused(
    tail: str, line: int, key: str, needle: str
) -> None:
    """The error names the file, line and key, the reason and what to do."""
    error = refusal(HEAD + tail)
    assert (line, key) == (error.line, error.key)
    assert needle in error.reason
    assert str(error).startswith(f"p.yaml:{line}: {key}: ")


def test_the_refusal_says_what_to_do() -> None:
    """Sign it (a bare name covers every region) or exempt it knowingly."""
    reason = refusal(HEAD + "signing:\n  reporting: {env: K}\n").reason
    assert "`signing: {billing-api: {env: VAR}}`" in reason
    assert "`signing_exempt: [billing-api]`" in reason


@pytest.mark.parametrize(
    "tail",
    [
        "signing:\n  billing-api: {env: K}\n",
        "signing:\n  billing-api: {env: K}\n  billing-api@eu: {env: E}\n",
        "signing:\n  reporting: {env: K}\nsigning_exempt: [billing-api]\n",
        "signing_exempt: [billing-api]\n",  # no signing: nothing to cover
    ],
    ids=["bare", "bare-and-exact", "exempt", "exempt-without-signing"],
)
def test_covered_or_exempt_policies_load(tail: str) -> None:
    """A bare name covers the owner's every region; an exemption is an explicit choice."""
    parse_policy(HEAD + tail, "p.yaml")


def test_an_exact_region_with_its_own_registry_entry_may_sign_alone() -> None:
    """`billing-api@eu` registered apart is its own source: signing it alone is coherent."""
    text = HEAD.replace(
        "  reporting:   {authority: derived}\n",
        "  reporting:   {authority: derived}\n  feed@eu: {authority: cached}\n  feed: {}\n",
    )
    parse_policy(text + "signing:\n  billing-api: {env: K}\n  feed@eu: {env: F}\n", "p.yaml")


@pytest.mark.parametrize(
    ("entry", "key", "needle"),
    [
        ("{env: K, keys: [{env: L}]}", "signing.billing-api", "not both"),
        ("{keys: [{env: K}, {file: k2}]}", "signing.billing-api", "at most one key"),
        (
            "{keys: [{kid: a, env: K}, {kid: a, env: L}]}",
            "signing.billing-api",
            "key id 'a' is given twice",
        ),
        ("{env: K, kid: 'bad kid'}", "signing.billing-api.kid", "should match pattern"),
        ("{keys: [s3cret]}", "signing.billing-api.keys.0", "never written in the policy"),
        ("{keys: [{kid: a, secret: x}]}", "signing.billing-api.keys.0.secret", "never written"),
    ],
    ids=["both-forms", "two-without-kid", "kid-twice", "kid-pattern", "literal", "literal-key"],
)
def test_malformed_key_lists_are_refused(entry: str, key: str, needle: str) -> None:
    """Each mistake in the keys form is named at its key."""
    error = refusal(HEAD + f"signing:\n  billing-api: {entry}\n")
    assert key == error.key
    assert needle in error.reason


def write(tmp_path: Path, text: str) -> Path:
    """A policy file in tmp_path."""
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_short_key_is_refused_naming_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys of fewer than 32 bytes are refused at load, naming the env variable and line."""
    monkeypatch.setenv("CW_SHORT_KEY", "x" * 31)
    path = write(tmp_path, HEAD + "signing:\n  billing-api: {env: CW_SHORT_KEY}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (8, "signing.billing-api.env") == (caught.value.line, caught.value.key)
    assert (
        "the key in environment variable CW_SHORT_KEY has 31 bytes; a signing key needs at least 32"
    ) in caught.value.reason


def test_rotating_keys_load_by_kid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`keys:` loads every key under its kid; the single form keeps its kid (or None)."""
    monkeypatch.setenv("CW_OLD", "o" * 32)
    monkeypatch.setenv("CW_NEW", "n" * 40)
    (tmp_path / "eu.key").write_bytes(b"e" * 32 + b"\n")
    text = HEAD + dedent(
        """\
        signing:
          billing-api:
            keys:
              - {env: CW_OLD}
              - {kid: "2026-12", env: CW_NEW}
          billing-api@eu: {kid: eu-1, file: eu.key}
        """
    )
    policy = load_policy(write(tmp_path, text))
    assert {
        "billing-api": {None: b"o" * 32, "2026-12": b"n" * 40},
        "billing-api@eu": {"eu-1": b"e" * 32},
    } == policy.signing_keys


def test_a_missing_rotated_key_names_its_place_in_the_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second key's variable is unset: the error names `keys.1.env` and its line."""
    monkeypatch.setenv("CW_OLD", "o" * 32)
    monkeypatch.delenv("CW_UNSET_NEW", raising=False)
    text = HEAD + (
        "signing:\n  billing-api:\n    keys:\n      - {env: CW_OLD}\n"
        "      - {kid: k2, env: CW_UNSET_NEW}\n"
    )
    with pytest.raises(PolicyError) as caught:
        load_policy(write(tmp_path, text))
    assert (11, "signing.billing-api.keys.1.env") == (caught.value.line, caught.value.key)
    assert "CW_UNSET_NEW is not set" in caught.value.reason


def test_the_resolve_command_exits_2_on_an_unsigned_system_of_record(tmp_path: Path) -> None:
    """`claimwatch resolve` refuses the policy with exit 2 and one line naming file and key."""
    path = write(tmp_path, HEAD + "signing:\n  reporting: {env: CW_ANY}\n")
    (tmp_path / "c.jsonl").write_text("")
    command = ["resolve", "--policy", str(path), str(tmp_path / "c.jsonl")]
    done = subprocess.run(
        [sys.executable, "-m", "claimwatch.cli.main", *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert 2 == done.returncode
    assert f"{path}:3: sources.billing-api: system of record 'billing-api'" in done.stderr
    assert "Traceback" not in done.stderr
