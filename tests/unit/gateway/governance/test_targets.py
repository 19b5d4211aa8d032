"""Targets (what a check reads, by JSON pointer) and masks (what a decision replaces)."""

from __future__ import annotations

import itertools

import pytest
from claimwatch.gateway.governance.targets import (
    Mask,
    PatternMask,
    Span,
    Target,
    argument_targets,
    masked_arguments,
    masked_result,
    result_targets,
)
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from tests.support.checks import text_result


def test_argument_targets_are_every_string_leaf_depth_first() -> None:
    arguments = {
        "body": "hello",
        "cc": ["a@x.org", 3, {"name": "Bo"}],
        "n": 5,
        "flag": True,
        "a/b": {"c~d": "odd key"},
        "empty": None,
    }
    assert (
        Target("/arguments/body", "hello"),
        Target("/arguments/cc/0", "a@x.org"),
        Target("/arguments/cc/2/name", "Bo"),
        Target("/arguments/a~1b/c~0d", "odd key"),
    ) == argument_targets(arguments)


def every_kind() -> CallToolResult:
    return CallToolResult(
        content=[
            TextContent(type="text", text="t0"),
            ImageContent(type="image", data="aGk=", mimeType="image/png"),
            EmbeddedResource(
                type="resource", resource=TextResourceContents(uri="file:///r", text="t2")
            ),
            EmbeddedResource(
                type="resource", resource=BlobResourceContents(uri="file:///b", blob="aGk=")
            ),
            AudioContent(type="audio", data="aGk=", mimeType="audio/wav"),
            ResourceLink(type="resource_link", name="doc", uri="file:///doc"),
        ],
        structured_content={"patient": {"note": "t6", "age": 40}, "tags": ["t7"]},
    )


def test_result_targets_read_text_blocks_text_resources_and_structured_strings() -> None:
    targets, unscannable = result_targets(every_kind())
    assert (
        Target("/content/0/text", "t0"),
        Target("/content/2/resource/text", "t2"),
        Target("/structured/patient/note", "t6"),
        Target("/structured/tags/0", "t7"),
    ) == targets
    assert ("/content/1", "/content/3", "/content/4", "/content/5") == unscannable


def test_overlapping_spans_become_one_with_the_earliest_label() -> None:
    mask = Mask(
        spans=(
            Span("/arguments/body", 10, 20, "PHONE"),
            Span("/arguments/body", 5, 12, "EMAIL"),
            Span("/arguments/body", 20, 22, "CARD"),  # touches, does not overlap
        )
    )
    masked, spans = masked_arguments({"body": "0123456789abcdefghijklmnop"}, mask)
    assert {"body": "01234[EMAIL][CARD]mnop"} == masked
    assert [
        Span("/arguments/body", 5, 20, "EMAIL"),
        Span("/arguments/body", 20, 22, "CARD"),
    ] == spans


def test_a_pattern_mask_is_found_in_every_target() -> None:
    mask = Mask(patterns=(PatternMask(r"\bGB\d{2}[A-Z]{4}\d{14}\b", "IBAN"),))
    arguments = {"iban": "GB82WEST12345698765432", "memo": ["pay GB82WEST12345698765432 now"]}
    masked, spans = masked_arguments(arguments, mask)
    assert {"iban": "[IBAN]", "memo": ["pay [IBAN] now"]} == masked
    assert [
        Span("/arguments/iban", 0, 22, "IBAN"),
        Span("/arguments/memo/0", 4, 26, "IBAN"),
    ] == spans


def test_patterns_are_ascii_as_in_re2() -> None:
    # U+0663 is an Arabic-Indic digit: `\d` in RE2 (and under re.ASCII) does not match it
    masked, spans = masked_arguments(
        {"n": "\u0663\u0663 and 33"}, Mask(patterns=(PatternMask(r"\d+"),))
    )
    assert {"n": "\u0663\u0663 and [REDACTED]"} == masked
    assert [Span("/arguments/n", 7, 9, "REDACTED")] == spans


def test_a_pointer_mask_replaces_a_number_whole_and_an_absent_pointer_is_ignored() -> None:
    mask = Mask(pointers=("/arguments/account/balance", "/arguments/nope", "/content/0"))
    masked, spans = masked_arguments({"account": {"balance": 1234.5, "id": "A1"}}, mask)
    assert {"account": {"balance": "[REDACTED]", "id": "A1"}} == masked
    assert [Span("/arguments/account/balance", 0, 0, "REDACTED")] == spans


def test_a_pointer_mask_wins_over_spans_inside_it() -> None:
    mask = Mask(spans=(Span("/arguments/body", 0, 3, "EMAIL"),), pointers=("/arguments/body",))
    masked, spans = masked_arguments({"body": "abcdef"}, mask)
    assert {"body": "[REDACTED]"} == masked
    assert [Span("/arguments/body", 0, 6, "REDACTED")] == spans


def test_a_pointer_to_all_arguments_masks_each_value() -> None:
    masked, _ = masked_arguments({"a": "x", "b": [1]}, Mask(pointers=("/arguments",)))
    assert {"a": "[REDACTED]", "b": "[REDACTED]"} == masked


def test_spans_outside_their_text_are_clipped_and_empty_ones_dropped() -> None:
    mask = Mask(
        spans=(
            Span("/arguments/body", 3, 99, "EMAIL"),
            Span("/arguments/body", 2, 2, "PHONE"),
            Span("/arguments/gone", 0, 1, "CARD"),
        )
    )
    masked, spans = masked_arguments({"body": "abcdef"}, mask)
    assert {"body": "abc[EMAIL]"} == masked
    assert [Span("/arguments/body", 3, 6, "EMAIL")] == spans


def test_strings_in_tuples_are_read_and_masked_like_lists() -> None:
    mask = Mask(patterns=(PatternMask("a@x.org", "EMAIL"),))
    masked, spans = masked_arguments({"to": ("a@x.org", "b")}, mask)
    assert {"to": ["[EMAIL]", "b"]} == masked
    assert [Span("/arguments/to/0", 0, 7, "EMAIL")] == spans


def test_masking_does_not_change_the_arguments_it_was_given() -> None:
    arguments = {"to": ["a@x.org"]}
    masked_arguments(arguments, Mask(patterns=(PatternMask("a@x.org", "EMAIL"),)))
    assert {"to": ["a@x.org"]} == arguments


def test_a_result_is_masked_in_text_resources_and_structured_content() -> None:
    result = every_kind()
    mask = Mask(
        spans=(
            Span("/content/0/text", 0, 2, "EMAIL"),
            Span("/content/2/resource/text", 1, 2, "PHONE"),
        ),
        patterns=(PatternMask("t6", "NATIONAL_ID"),),
        pointers=("/content/1", "/structured/patient/age"),
    )
    masked, spans = masked_result(result, mask)
    content = masked.content
    assert isinstance(content[0], TextContent) and "[EMAIL]" == content[0].text
    assert TextContent(type="text", text="[REDACTED]") == content[1]
    assert isinstance(content[2], EmbeddedResource)
    assert isinstance(content[2].resource, TextResourceContents)
    assert "t[PHONE]" == content[2].resource.text
    assert "file:///r" == content[2].resource.uri
    assert result.content[3:] == content[3:]
    assert {"patient": {"note": "[NATIONAL_ID]", "age": "[REDACTED]"}, "tags": ["t7"]} == (
        masked.structured_content
    )
    assert [
        Span("/content/0/text", 0, 2, "EMAIL"),
        Span("/content/2/resource/text", 1, 2, "PHONE"),
        Span("/structured/patient/note", 0, 2, "NATIONAL_ID"),
        Span("/content/1", 0, 0, "REDACTED"),
        Span("/structured/patient/age", 0, 0, "REDACTED"),
    ] == spans
    assert "t0" == result.content[0].text  # type: ignore[union-attr]  # the original stays


def test_masking_leaves_meta_alone() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="mail a@x.org", _meta={"seen": "a@x.org"})],
        structured_content={"who": "a@x.org"},
        _meta={"trace": "a@x.org"},
    )
    masked, _ = masked_result(result, Mask(patterns=(PatternMask(r"a@x\.org", "EMAIL"),)))
    assert {"trace": "a@x.org"} == masked.meta
    assert {"seen": "a@x.org"} == masked.content[0].meta
    assert "mail [EMAIL]" == masked.content[0].text  # type: ignore[union-attr]
    assert {"who": "[EMAIL]"} == masked.structured_content


def test_a_result_without_structured_content_keeps_none() -> None:
    masked, spans = masked_result(text_result("x"), Mask(pointers=("/structured",)))
    assert None is masked.structured_content
    assert [] == spans


@pytest.mark.parametrize("pointer", ["/content/0", "/content/0/text"])
def test_a_pointer_to_a_text_block_or_its_text_redacts_it(pointer: str) -> None:
    masked, spans = masked_result(text_result("secret", "kept"), Mask(pointers=(pointer,)))
    assert ["[REDACTED]", "kept"] == [b.text for b in masked.content]  # type: ignore[union-attr]
    assert pointer == spans[0].pointer


# ------------------------------------------------------------------------------ properties

WORDS = st.text(alphabet=st.sampled_from("ab1 -@."), max_size=40)
SPANS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6)


@given(WORDS, SPANS)
def test_masked_spans_are_disjoint_and_cover_every_span_given(
    text: str, pairs: list[tuple[int, int]]
) -> None:
    given_spans = tuple(Span("/arguments/t", a, b, "X") for a, b in pairs)
    _, spans = masked_arguments({"t": text}, Mask(spans=given_spans))
    ends = [(s.start, s.end) for s in spans]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ends))
    for start, end in pairs:
        end = min(end, len(text))
        if start < end:
            assert any(s.start <= start and end <= s.end for s in spans)


@given(WORDS)
def test_pattern_masking_is_idempotent(text: str) -> None:
    mask = Mask(patterns=(PatternMask(r"[ab1]+@[ab1.]+", "EMAIL"),))
    once, _ = masked_arguments({"t": text}, mask)
    twice, spans = masked_arguments(once, mask)
    assert once == twice
    assert [] == spans
