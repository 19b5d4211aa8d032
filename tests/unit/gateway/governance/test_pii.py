"""The PII scan: the table of tested patterns, phonenumbers, and the one argument a check makes."""

from __future__ import annotations

from typing import Any

import pytest
from claimwatch.gateway.governance.checks import Argument, CheckFailed
from claimwatch.gateway.governance.pii import ENTITIES, PiiCheck, luhn_valid, scan
from claimwatch.gateway.governance.targets import Mask, Span, Target, masked_arguments
from claimwatch.policy.source import PolicyError
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import CallToolResult, ImageContent, TextContent

from tests.support.checks import arguments_call, env, result_call, source_of

LIBPHONENUMBER_DOC = "Hi, can you ring me at 1430 on 0117 496 0123. Thanks!"

# (text, phone regions, expected (entity, matched text, detail)): design section 2.3
ROWS: list[tuple[str, list[str], list[tuple[str, str, str]]]] = [
    (
        "Write to alice@example.org or bob@example.org.",
        ["US"],
        [("email", "alice@example.org", "email"), ("email", "bob@example.org", "email")],
    ),
    (
        "Alice.Smith+news@mail.example.co.uk",
        ["US"],
        [("email", "Alice.Smith+news@mail.example.co.uk", "email")],
    ),
    ("user@localhost", ["US"], []),
    ("a@b", ["US"], []),
    ("@example.org", ["US"], []),
    ("alice@example.", ["US"], []),
    ("call +1 425 882-8080 today", ["US"], [("phone", "+1 425 882-8080", "US")]),
    (LIBPHONENUMBER_DOC, ["GB"], [("phone", "0117 496 0123", "GB")]),
    ("+44 20 7183 8750", ["US"], [("phone", "+44 20 7183 8750", "GB")]),
    ("order of 2026-12-05, invoice INV-2026-0001, 1430 units", ["US", "GB"], []),
    ("card 4111 1111 1111 1111", ["US"], [("card", "4111 1111 1111 1111", "visa")]),
    ("5500-0000-0000-0004", ["US"], [("card", "5500-0000-0000-0004", "mastercard")]),
    ("378282246310005", ["US"], [("card", "378282246310005", "amex")]),
    ("6011111111111117", ["US"], [("card", "6011111111111117", "discover")]),
    ("4111 1111 1111 1112", ["US"], []),  # Luhn fails
    ("1234567812345670", ["US"], []),  # Luhn passes, no issuer starts with 1
    ("4111 1111-1111 1111", ["US"], []),  # mixed separators
    ("SSN 123-45-6789", ["US"], [("national_id", "123-45-6789", "us_ssn")]),
    ("123 45 6789", ["US"], [("national_id", "123 45 6789", "us_ssn")]),
    ("000-12-3456", ["US"], []),
    ("666-12-3456", ["US"], []),
    ("900-12-3456", ["US"], []),
    ("123-00-4567", ["US"], []),
    ("123-45-0000", ["US"], []),
    ("123-45 6789", ["US"], []),
    ("123456789", ["US"], []),  # bare nine digits: not an SSN
    ("NINO AB 12 34 56 C", [], [("national_id", "AB 12 34 56 C", "uk_nino")]),
    ("AB123456C", [], [("national_id", "AB123456C", "uk_nino")]),
    ("QQ 12 34 56 C", [], []),  # Q is not a first letter
    ("GB123456A", [], []),
    ("AB123456E", [], []),
    # the OPA packs' inputs hold no phone number, card or id
    ("MRN 00482913, MRN: 482913, MRN#0048291300 diagnosis E11.9", ["US", "GB"], []),
    ("IBAN GB82 WEST 1234 5698 7654 32", ["US", "GB"], []),
]


@pytest.mark.parametrize(("text", "regions", "expected"), ROWS)
def test_scan_finds_what_the_table_says(
    text: str, regions: list[str], expected: list[tuple[str, str, str]]
) -> None:
    found = scan([Target("/arguments/body", text)], ENTITIES, regions)
    assert expected == [(f.entity, text[f.start : f.end], f.detail) for f in found]


@pytest.mark.parametrize(
    ("digits", "valid"),
    [("79927398713", True), ("79927398710", False), ("1234567812345670", True), ("", False)],
)
def test_luhn_valid(digits: str, valid: bool) -> None:
    assert valid is luhn_valid(digits)


def test_scan_looks_only_for_the_entities_asked() -> None:
    text = "alice@example.org, 123-45-6789, 4111 1111 1111 1111"
    found = scan([Target("/a", text)], ("national_id",), [])
    assert [("national_id", "123-45-6789")] == [(f.entity, text[f.start : f.end]) for f in found]


def test_scan_orders_findings_by_pointer_then_start() -> None:
    targets = [
        Target("/arguments/b", "x 123-45-6789 bob@example.org"),
        Target("/arguments/a", "a@x.org"),
    ]
    found = scan(targets, ENTITIES, [])
    assert [("/arguments/a", 0), ("/arguments/b", 2), ("/arguments/b", 14)] == [
        (f.pointer, f.start) for f in found
    ]


def check(**raw: Any) -> PiiCheck:
    config = {
        "kind": "pii",
        "entities": {"email": "mask", "phone": "mask", "card": "mask", "national_id": "block"},
        "phone_regions": ["US", "GB"],
        **raw,
    }
    source, checks = source_of({"pii": config})
    return PiiCheck.from_config("pii", checks["pii"], source, env(max_scan_bytes=64))


async def test_a_check_masks_the_entities_to_mask() -> None:
    text = "Write to alice@example.org or bob@example.org."
    argument = await check().argue(arguments_call({"body": text}))
    spans = (
        Span("/arguments/body", 9, 26, "EMAIL"),
        Span("/arguments/body", 30, 45, "EMAIL"),
    )
    assert (
        Argument(
            "pii_detected", "2 PII items (email ×2) — masking required", 0.6, "modify", Mask(spans)
        )
        == argument
    )


async def test_a_block_wins_over_a_mask() -> None:
    call = arguments_call({"body": "alice@example.org", "id": "SSN 123-45-6789"})
    argument = await check().argue(call)
    assert (
        Argument("pii_critical", "1 critical PII item (national_id ×1) — blocked", 0.9, "deny")
        == argument
    )


async def test_nothing_found_is_argued_clear() -> None:
    call = arguments_call({"body": "nothing here", "n": 3, "to": ["ops"]})
    argument = await check().argue(call)
    assert Argument("pii_clear", "no PII in 2 strings (15 characters)", 0.3, "allow") == argument


async def test_kinds_strengths_and_actions_are_configurable() -> None:
    configured = check(
        entities={"email": "block"},
        kinds={"block": "contact_leak"},
        strength={"block": 0.5},
    )
    argument = await configured.argue(arguments_call({"body": "bob@example.org 123-45-6789"}))
    assert ("contact_leak", 0.5, "deny") == (argument.kind, argument.strength, argument.decision)
    assert "1 critical PII item (email ×1) — blocked" == argument.claim


def image_result() -> CallToolResult:
    return CallToolResult(
        content=[
            TextContent(type="text", text="see alice@example.org"),
            ImageContent(type="image", data="aGk=", mimeType="image/png"),
        ]
    )


async def test_an_image_fails_the_check_under_unscannable_block() -> None:
    with pytest.raises(CheckFailed) as failed:
        await check().argue(result_call(image_result()))
    assert "cannot scan /content/1 (image)" == str(failed.value)


async def test_an_image_is_named_in_the_claim_under_unscannable_ignore() -> None:
    argument = await check(unscannable="ignore").argue(result_call(image_result()))
    assert (
        "1 PII item (email ×1) — masking required; not scanned: /content/1 (image)"
        == argument.claim
    )
    assert (Span("/content/0/text", 4, 21, "EMAIL"),) == argument.mask.spans


async def test_more_text_than_max_scan_bytes_fails_the_check() -> None:
    pii = check()
    await pii.argue(arguments_call({"body": "x" * 64}))  # exactly the limit is scanned
    with pytest.raises(CheckFailed) as failed:
        await pii.argue(arguments_call({"body": "x" * 65}))
    assert "65 bytes of text to scan, more than max_scan_bytes (64)" == str(failed.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"entities": {"emial": "mask"}},
            "gateway.yaml:6: governance.checks.pii.entities.emial: "
            "Input should be 'email', 'phone', 'card' or 'national_id'",
        ),
        (
            {"entities": {"email": "redact"}},
            "gateway.yaml:6: governance.checks.pii.entities.email: "
            "Input should be 'mask' or 'block'",
        ),
        (
            {"phone_regions": ["UK"]},
            "gateway.yaml:10: governance.checks.pii.phone_regions: 'UK' is not a region "
            "libphonenumber knows: write an ISO 3166 code in capitals, e.g. US, GB, DE (the UK "
            "is GB)",
        ),
        (
            {"phone_regions": None},
            "gateway.yaml:3: governance.checks.pii.phone_regions: missing: a phone scan needs "
            "the regions whose national numbers it finds, e.g. [US, GB] ([] finds only numbers "
            "written in +CC form)",
        ),
        (
            {"strength": {"mask": 1.5}},
            "gateway.yaml:14: governance.checks.pii.strength.mask: "
            "Input should be less than or equal to 1",
        ),
        (
            {"unscannable": "skip"},
            "gateway.yaml:13: governance.checks.pii.unscannable: "
            "Input should be 'block' or 'ignore'",
        ),
        (
            {"entitles": {}},
            "gateway.yaml:13: governance.checks.pii.entitles: unknown key (a pii check has "
            "kind, entities, phone_regions, unscannable, strength, kinds, timeout; see "
            "docs/gateway-checks.md)",
        ),
        (
            {"timeout": "soon"},
            "gateway.yaml:13: governance.checks.pii.timeout: 'soon' is not a duration: write a "
            "number and a unit (ms, s, m, h, d), e.g. 500ms or 5m",
        ),
    ],
)
def test_config_errors_name_the_line_and_key(raw: dict[str, Any], expected: str) -> None:
    config = {
        "kind": "pii",
        "entities": {"email": "mask", "phone": "mask", "card": "mask", "national_id": "block"},
        "phone_regions": ["US", "GB"],
        **raw,
    }
    if raw.get("phone_regions", "") is None:
        del config["phone_regions"]
    source, checks = source_of({"pii": config})
    with pytest.raises(PolicyError) as refused:
        PiiCheck.from_config("pii", checks["pii"], source, env())
    assert expected == str(refused.value)


# ------------------------------------------------------------------------------ properties

LOCAL = st.from_regex(r"[a-z][a-z0-9._+-]{0,10}[a-z0-9]", fullmatch=True)
DOMAIN = st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]\.(org|com|co\.uk|example)", fullmatch=True)
ADDRESS = st.builds(lambda local, domain: f"{local}@{domain}", LOCAL, DOMAIN)
FILLER = st.text(alphabet=st.sampled_from("abc XYZ,.;:()[]!?\n"), max_size=12)
TEXT = st.lists(st.one_of(ADDRESS, FILLER), min_size=1, max_size=8).map(" ".join)


def emails_masked(text: str) -> tuple[str, list[str]]:
    """The text with the e-mails the scan finds masked, and the texts it found."""
    findings = scan([Target("/arguments/body", text)], ("email",), [])
    spans = tuple(Span(f.pointer, f.start, f.end, "EMAIL") for f in findings)
    masked, _ = masked_arguments({"body": text}, Mask(spans))
    return masked["body"], [text[f.start : f.end] for f in findings]


@given(TEXT)
def test_masking_leaves_no_found_address_behind(text: str) -> None:
    masked, found = emails_masked(text)
    assert [] == [address for address in found if address in masked]
    assert [] == scan([Target("/arguments/body", masked)], ("email",), [])


@given(TEXT)
def test_masking_masked_text_again_changes_nothing(text: str) -> None:
    once, _ = emails_masked(text)
    assert once == emails_masked(once)[0]
