"""Policy files: safe loading, errors that name line, key and reason, and authority lookups."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from claimwatch.core.policy import CompiledPolicy
from claimwatch.models.durations import UNTIL_EDITED, US_PER_MS, US_PER_S
from claimwatch.models.policy import Authority
from claimwatch.policy.loading import load_policy, parse_policy
from claimwatch.policy.source import MAX_POLICY_BYTES, PolicyError

from tests.support.paths import REPO

EXAMPLE = REPO / "examples" / "policy.yaml"


@pytest.fixture(scope="module")
def example() -> CompiledPolicy:
    """The bundled example policy, compiled."""
    return load_policy(EXAMPLE)


def _policy(text: str) -> CompiledPolicy:
    return CompiledPolicy(parse_policy(dedent(text), "test.yaml"))


def _refusal(text: str) -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        parse_policy(dedent(text), "bad.yaml")
    return caught.value


def test_example_policy_loads(example: CompiledPolicy) -> None:
    """The bundled example policy validates and keeps its version, sources and fields."""
    assert "arbitration-2026-09" == example.version
    assert {"billing-api", "ledger-replica", "reporting-replica", "scorer", "user"} == set(
        example.policy.sources
    )
    assert "USD" == example.policy.fields["balance"].currency
    assert ["paid", "unpaid", "overdue", "refunded"] == example.policy.fields[
        "payment_status"
    ].values


def test_example_policy_rules_apply_defaults(example: CompiledPolicy) -> None:
    """A field without its own setting inherits the defaults; its own setting wins."""
    assert 60 * US_PER_S == example.rule("payment_status").freshness_us
    assert 500 * US_PER_MS == example.rule("unit_price").settle_us
    assert 2 * US_PER_S == example.rule("balance").settle_us
    assert 5 * 60 * US_PER_S == example.rule("not_in_policy").freshness_us
    assert UNTIL_EDITED == example.rule("shipping_address").freshness_us


# (case id, policy text, expected key, expected line, words the reason must contain)
INVALID = [
    (
        "money_without_currency",
        """\
        policy_version: v1
        fields:
          balance: {type: money, freshness: 60s}
        """,
        "fields.balance",
        3,
        ["currency"],
    ),
    (
        "unknown_currency",
        """\
        policy_version: v1
        fields:
          balance:
            type: money
            currency: XYZ
        """,
        "fields.balance.currency",
        5,
        ["XYZ", "ISO 4217"],
    ),
    (
        "quantity_without_unit",
        """\
        policy_version: v1
        fields:
          weight:
            type: quantity
        """,
        "fields.weight",
        3,
        ["unit"],
    ),
    (
        "unknown_unit",
        """\
        policy_version: v1
        fields:
          weight:
            type: quantity
            unit: florps
        """,
        "fields.weight.unit",
        5,
        ["florps"],
    ),
    (
        "enum_without_values",
        """\
        policy_version: v1
        fields:
          status: {type: enum}
        """,
        "fields.status",
        3,
        ["values"],
    ),
    (
        "misspelled_default",
        """\
        policy_version: v1
        defaults:
          freshnes: 5m
        """,
        "defaults.freshnes",
        3,
        ["unknown key"],
    ),
    (
        "misspelled_field_key",
        """\
        policy_version: v1
        fields:
          balance:
            type: money
            currency: USD
            freshnes: 60s
        """,
        "fields.balance.freshnes",
        6,
        ["unknown key"],
    ),
    (
        "bad_duration",
        """\
        policy_version: v1
        defaults:
          clock_skew: 5s
          freshness: 5 minutes
        """,
        "defaults.freshness",
        4,
        ["5 minutes", "duration"],
    ),
    (
        "bad_field_duration",
        """\
        policy_version: v1
        fields:
          balance:
            type: money
            currency: USD
            freshness: 5 minutes
        """,
        "fields.balance.freshness",
        6,
        ["5 minutes", "duration"],
    ),
    (
        "unknown_authority_class",
        """\
        policy_version: v1
        sources:
          billing-api: {authority: king}
        """,
        "sources.billing-api.authority",
        3,
        ["system_of_record"],
    ),
    (
        "duplicate_key",
        """\
        policy_version: v1
        fields:
          balance: {type: money, currency: USD}
          balance: {type: money, currency: EUR}
        """,
        "fields.balance",
        4,
        ["duplicate", "balance"],
    ),
    (
        "python_tag",
        """\
        policy_version: !!python/object/apply:os.system ["echo pwned"]
        """,
        "policy_version",
        1,
        ["python/object/apply:os.system"],
    ),
    (
        "not_a_mapping",
        """\
        - policy_version
        - v1
        """,
        "",
        1,
        ["mapping"],
    ),
    (
        "missing_policy_version",
        """\
        defaults:
          freshness: 5m
        """,
        "policy_version",
        1,
        ["required"],
    ),
]


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_policy_is_refused_naming_key_line_and_reason(
    text: str, key: str, line: int, words: list[str]
) -> None:
    """Each invalid policy raises PolicyError pointing at the offending key and line."""
    error = _refusal(text)
    assert key == error.key
    assert line == error.line
    assert "bad.yaml" == error.path
    for word in words:
        assert word.lower() in error.reason.lower()
    assert f"bad.yaml:{line}" in str(error)


def test_python_tag_is_not_executed(tmp_path: Path) -> None:
    """Safe loading: a python tag is refused before anything it names could run."""
    marker = tmp_path / "ran"
    text = f'policy_version: !!python/object/apply:os.system ["touch {marker}"]\n'
    with pytest.raises(PolicyError):
        parse_policy(text, "bad.yaml")
    assert False is marker.exists()


def test_invalid_yaml_syntax_names_the_line() -> None:
    """A syntax error is refused with the line where the parser gave up."""
    error = _refusal(
        """\
        policy_version: v1
        fields:
          balance: {type: money, currency: USD
        defaults: {}
        """
    )
    assert "invalid YAML" in error.reason
    assert 4 == error.line  # the unclosed mapping on line 3 runs into line 4


def test_missing_policy_file_is_a_policy_error(tmp_path: Path) -> None:
    """A file that cannot be read is refused with its path."""
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PolicyError) as caught:
        load_policy(missing)
    assert str(missing) == caught.value.path
    assert "cannot read" in caught.value.reason


def test_default_policy_limit_is_one_mib() -> None:
    """Without `max_bytes` a policy file may be at most 1 MiB."""
    assert 1024 * 1024 == MAX_POLICY_BYTES


def test_oversized_policy_is_refused_by_its_size(tmp_path: Path) -> None:
    """A 50 MB file is refused by its size: the error is the size, not what parsing would say."""
    big = tmp_path / "policy.yaml"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # NUL bytes: parsing them would be a YAML error
    with pytest.raises(PolicyError) as caught:
        load_policy(big)
    expected = f"{big}: 52428800 bytes exceeds the 1048576-byte policy limit (--max-policy-bytes)"
    assert expected == str(caught.value)
    assert (str(big), None) == (caught.value.path, caught.value.line)


def test_endless_file_is_refused_after_a_bounded_read() -> None:
    """A file with no size (/dev/zero) is read only up to the limit, then refused."""
    with pytest.raises(PolicyError) as caught:
        load_policy("/dev/zero", max_bytes=4096)
    expected = "/dev/zero: more than 4096 bytes exceeds the 4096-byte policy limit"
    assert expected == str(caught.value).removesuffix(" (--max-policy-bytes)")


@pytest.mark.parametrize(
    ("extra", "max_bytes", "refused"),
    [
        (0, EXAMPLE.stat().st_size, False),
        (0, EXAMPLE.stat().st_size - 1, True),
        (MAX_POLICY_BYTES, MAX_POLICY_BYTES, True),
        (MAX_POLICY_BYTES, 2 * MAX_POLICY_BYTES + EXAMPLE.stat().st_size, False),
    ],
    ids=["exactly_at_limit", "one_byte_over", "padded_over_default", "padded_under_raised"],
)
def test_max_bytes_sets_the_limit(
    tmp_path: Path, extra: int, max_bytes: int, refused: bool
) -> None:
    """`max_bytes` is the largest size loaded; a raised limit loads a padded policy."""
    policy = tmp_path / "policy.yaml"
    policy.write_bytes(EXAMPLE.read_bytes() + b"#" * extra)
    if refused:
        with pytest.raises(PolicyError) as caught:
            load_policy(policy, max_bytes=max_bytes)
        assert f"exceeds the {max_bytes}-byte policy limit" in caught.value.reason
    else:
        assert "arbitration-2026-09" == load_policy(policy, max_bytes=max_bytes).version


# (case id, file bytes, line of the first bad byte, its offset, the byte)
BAD_UTF8 = [
    ("latin1_in_value", b"policy_version: v1\nfields:\n  x: caf\xe9\n", 3, 35, 0xE9),
    ("in_first_line_comment", b"# \xff\npolicy_version: v1\n", 1, 2, 0xFF),
    ("truncated_sequence_at_end", b"policy_version: v1\n# \xe2\x82", 2, 21, 0xE2),
    ("overlong_encoding", b"policy_version: v1\n\n\n# \xc0\xaf\n", 4, 23, 0xC0),
    ("utf16_bom", b"\xff\xfep\x00", 1, 0, 0xFF),
]


@pytest.mark.parametrize(
    ("data", "line", "offset", "byte"),
    [case[1:] for case in BAD_UTF8],
    ids=[case[0] for case in BAD_UTF8],
)
def test_invalid_utf8_names_line_and_byte_offset(
    tmp_path: Path, data: bytes, line: int, offset: int, byte: int
) -> None:
    """A byte that is not UTF-8 is refused naming the file, its line and its byte offset."""
    policy = tmp_path / "policy.yaml"
    policy.write_bytes(data)
    with pytest.raises(PolicyError) as caught:
        load_policy(policy)
    expected = f"{policy}:{line}: invalid UTF-8 byte 0x{byte:02x} at byte offset {offset}"
    assert expected == str(caught.value)
    assert line == caught.value.line


# (case id, file text, expected line, words the reason must contain)
NOT_A_POLICY = [
    ("empty_file", "", 1, "must be a mapping"),
    ("top_level_list", "- policy_version\n- v1\n", 1, "must be a mapping"),
    ("top_level_scalar", "just words\n", 1, "must be a mapping"),
    ("unclosed_flow_mapping", "policy_version: v1\nfields: {a: 1\n", 3, "invalid YAML"),
    ("nul_character", "policy_version: v1\n# \x00\n", 2, "unacceptable character #x0000"),
]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [case[1:] for case in NOT_A_POLICY],
    ids=[case[0] for case in NOT_A_POLICY],
)
def test_file_that_is_no_policy_mapping_is_one_clean_error(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    """Bad YAML or a top level that is no mapping is a one-line PolicyError with the line."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(policy)
    assert line == caught.value.line
    assert words in caught.value.reason
    assert [str(caught.value)] == str(caught.value).splitlines()


@pytest.mark.parametrize(
    ("raw", "expected_us"),
    [
        ("500ms", 500 * US_PER_MS),
        ("60s", 60 * US_PER_S),
        ("5m", 5 * 60 * US_PER_S),
        ("24h", 24 * 3600 * US_PER_S),
        ("until_edited", UNTIL_EDITED),
    ],
)
def test_durations_parse(raw: str, expected_us: int) -> None:
    """Durations as written in a policy become microseconds on the compiled rule."""
    compiled = _policy(
        f"""\
        policy_version: v1
        fields:
          balance: {{type: money, currency: USD, freshness: {raw}}}
        """
    )
    assert expected_us == compiled.rule("balance").freshness_us


@pytest.mark.parametrize(
    ("source", "authority", "lineage"),
    [
        ("scorer", Authority.SYSTEM_OF_RECORD, "scorer"),
        ("scorer@batch-2", Authority.SYSTEM_OF_RECORD, "scorer"),
        ("billing-api", Authority.DERIVED, "ledger"),
        ("ledger-replica", Authority.CACHED, "ledger"),
        ("user", Authority.ASSERTED, "user"),
    ],
)
def test_field_authority_map_comes_first(
    example: CompiledPolicy, source: str, authority: Authority, lineage: str
) -> None:
    """risk_score's own map makes scorer the system of record and billing-api derived."""
    view = example.source_view("risk_score", source)
    assert (authority, lineage, True) == (view.authority, view.lineage, view.registered)


def test_registry_applies_when_the_field_has_no_map(example: CompiledPolicy) -> None:
    """Ownership is per field: billing-api owns payment_status, scorer is only derived there."""
    assert (
        Authority.SYSTEM_OF_RECORD == example.source_view("payment_status", "billing-api").authority
    )
    assert Authority.DERIVED == example.source_view("payment_status", "scorer").authority


def test_part_before_at_is_looked_up(example: CompiledPolicy) -> None:
    """`reporting-replica@eu-west-1` takes the class and lineage of `reporting-replica`."""
    view = example.source_view("payment_status", "reporting-replica@eu-west-1")
    assert (Authority.DERIVED, "reporting", True) == (view.authority, view.lineage, view.registered)


def test_exact_registry_id_beats_the_part_before_at() -> None:
    """A registry entry for the exact id wins over the entry of its service part."""
    compiled = _policy(
        """\
        policy_version: v1
        sources:
          billing-api:           {authority: system_of_record, lineage: ledger}
          billing-api@sandbox:   {authority: asserted, lineage: sandbox}
        fields:
          payment_status: {type: enum, values: [paid, unpaid]}
        """
    )
    exact = compiled.source_view("payment_status", "billing-api@sandbox")
    base = compiled.source_view("payment_status", "billing-api@us-east-1")
    assert (Authority.ASSERTED, "sandbox") == (exact.authority, exact.lineage)
    assert (Authority.SYSTEM_OF_RECORD, "ledger") == (base.authority, base.lineage)


def test_field_map_beats_an_exact_registry_entry() -> None:
    """The field's own map wins even over a registry entry for the exact source id."""
    compiled = _policy(
        """\
        policy_version: v1
        sources:
          billing-api@eu: {authority: system_of_record, lineage: ledger}
        fields:
          risk_score: {type: number, authority: {billing-api: derived}}
        """
    )
    assert Authority.DERIVED == compiled.source_view("risk_score", "billing-api@eu").authority
    assert Authority.SYSTEM_OF_RECORD == compiled.source_view("other", "billing-api@eu").authority


@pytest.mark.parametrize("source", ["crm", "crm@eu-west-1"])
def test_unregistered_source_is_derived(example: CompiledPolicy, source: str) -> None:
    """A source missing from the field map and the registry is derived and unregistered."""
    view = example.source_view("payment_status", source)
    assert (Authority.DERIVED, source, False) == (view.authority, view.lineage, view.registered)


def test_owner_defaults_to_the_sole_system_of_record(example: CompiledPolicy) -> None:
    """Without `owner`, the field's one system-of-record source is its owner."""
    assert "billing-api" == example.rule("balance").owner
    assert "scorer" == example.rule("risk_score").owner
    assert "billing-api" == example.rule("payment_status").owner


def test_no_default_owner_when_system_of_record_is_ambiguous() -> None:
    """Two system-of-record sources: no default owner; an explicit owner still applies."""
    compiled = _policy(
        """\
        policy_version: v1
        sources:
          billing-api: {authority: system_of_record}
          erp:         {authority: system_of_record}
        fields:
          balance: {type: money, currency: USD}
          payment_status: {type: enum, values: [paid], owner: erp}
          risk_score: {type: number, authority: {erp: derived}}
        """
    )
    assert None is compiled.rule("balance").owner
    assert "erp" == compiled.rule("payment_status").owner
    assert "billing-api" == compiled.rule("risk_score").owner
