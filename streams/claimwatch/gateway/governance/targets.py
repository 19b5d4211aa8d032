"""What a check can read of a call (targets) and what a decision masks in it.

A target is one string of the phase's document, named by an RFC 6901 pointer: the
arguments (`/arguments/body`, `/arguments/cc/0`) or the result (`/content/0/text`,
`/content/2/resource/text`, `/structured/patient/note`). Masks name spans of targets,
patterns to find in them, or whole values; masking replaces them right to left with
`[LABEL]` and reports what it replaced. Masking reads and writes those strings only: a
result's and a block's `_meta` are never targets and are copied as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp.types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    TextContent,
    TextResourceContents,
)


@dataclass(frozen=True, slots=True)
class Target:
    """One scannable string and where it is."""

    pointer: str
    text: str


@dataclass(frozen=True, slots=True)
class Span:
    """Characters `start:end` of the string at `pointer`, to be replaced by `[label]`."""

    pointer: str
    start: int
    end: int
    label: str


@dataclass(frozen=True, slots=True)
class PatternMask:
    """Every match of `pattern` (RE2-compatible, compiled with re.ASCII) in every target."""

    pattern: str
    label: str = "REDACTED"


@dataclass(frozen=True, slots=True)
class Mask:
    """What one argument asks to mask."""

    spans: tuple[Span, ...] = ()
    patterns: tuple[PatternMask, ...] = ()
    pointers: tuple[str, ...] = ()

    def empty(self) -> bool:
        return not (self.spans or self.patterns or self.pointers)

    def union(self, other: Mask) -> Mask:
        return Mask(
            self.spans + other.spans,
            self.patterns + other.patterns,
            self.pointers + other.pointers,
        )


#: What a pointer mask puts in place of the whole value it names.
REDACTED: Final = "[REDACTED]"
#: Where each phase's document starts.
ARGUMENTS: Final = "/arguments"
CONTENT: Final = "/content"
STRUCTURED: Final = "/structured"


def escape(key: str) -> str:
    """A key as one RFC 6901 reference token (`~` -> `~0`, `/` -> `~1`)."""
    return key.replace("~", "~0").replace("/", "~1")


def _leaves(value: Any, pointer: str) -> Iterator[Target]:
    """Every string under `value`, depth first, keys in their order."""
    if isinstance(value, str):
        yield Target(pointer, value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{pointer}/{escape(str(key))}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{pointer}/{index}")


def argument_targets(arguments: Mapping[str, Any]) -> tuple[Target, ...]:
    """Every string leaf of the arguments, depth first, keys in order."""
    return tuple(_leaves(arguments, ARGUMENTS))


def _block_target(block: ContentBlock, pointer: str) -> Target | None:
    """The text of a text block or of an embedded text resource; None for anything else."""
    if isinstance(block, TextContent):
        return Target(f"{pointer}/text", block.text)
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
        return Target(f"{pointer}/resource/text", block.resource.text)
    return None


def result_targets(result: CallToolResult) -> tuple[tuple[Target, ...], tuple[str, ...]]:
    """The result's strings, and the pointers of blocks no check can read (images, blobs)."""
    targets: list[Target] = []
    unscannable: list[str] = []
    for index, block in enumerate(result.content):
        pointer = f"{CONTENT}/{index}"
        target = _block_target(block, pointer)
        if target is None:
            unscannable.append(pointer)
        else:
            targets.append(target)
    targets.extend(_leaves(result.structured_content, STRUCTURED))
    return tuple(targets), tuple(unscannable)


def block_kind(result: CallToolResult, pointer: str) -> str:
    """What the content block at `/content/N` is, in words (`image`, `blob resource`, ...)."""
    index = int(pointer.rsplit("/", 1)[-1])
    block = result.content[index]
    if isinstance(block, EmbeddedResource):
        return "blob resource"
    return block.type.replace("_", " ")


def _pattern_spans(targets: Sequence[Target], mask: Mask) -> list[Span]:
    """The spans of every pattern match in every target (empty matches ignored)."""
    compiled = [(re.compile(p.pattern, re.ASCII), p.label) for p in mask.patterns]
    return [
        Span(target.pointer, match.start(), match.end(), label)
        for target in targets
        for pattern, label in compiled
        for match in pattern.finditer(target.text)
        if match.end() > match.start()
    ]


def merged(spans: Sequence[Span], text: str) -> list[Span]:
    """One string's spans, clipped to it, overlaps merged (the earliest's label), by start."""
    clipped = sorted(
        (Span(s.pointer, max(0, s.start), min(len(text), s.end), s.label) for s in spans),
        key=lambda s: (s.start, -s.end),
    )
    out: list[Span] = []
    for span in clipped:
        if span.end <= span.start:
            continue
        if out and span.start < out[-1].end:
            last = out[-1]
            out[-1] = Span(last.pointer, last.start, max(last.end, span.end), last.label)
        else:
            out.append(span)
    return out


def replaced(text: str, spans: Sequence[Span]) -> str:
    """`text` with merged, sorted `spans` replaced right to left by `[LABEL]`."""
    for span in reversed(spans):
        text = f"{text[: span.start]}[{span.label}]{text[span.end :]}"
    return text


def _under(pointer: str, whole: Sequence[str]) -> bool:
    """Whether `pointer` is one of `whole` or inside one of them."""
    return any(pointer == w or pointer.startswith(w + "/") for w in whole)


def _text_plan(
    targets: Sequence[Target], mask: Mask, whole: Sequence[str]
) -> dict[str, tuple[str, list[Span]]]:
    """Per pointer, the masked text and its merged spans (strings masked whole left out)."""
    by_pointer: dict[str, list[Span]] = {}
    for span in (*mask.spans, *_pattern_spans(targets, mask)):
        by_pointer.setdefault(span.pointer, []).append(span)
    plan: dict[str, tuple[str, list[Span]]] = {}
    for target in targets:
        spans = merged(by_pointer.get(target.pointer, ()), target.text)
        if spans and not _under(target.pointer, whole):
            plan[target.pointer] = (replaced(target.text, spans), spans)
    return plan


def _tokens(pointer: str, root: str) -> list[str] | None:
    """The reference tokens of `pointer` below `root`, or None when it is not under it."""
    if pointer == root:
        return []
    if not pointer.startswith(root + "/"):
        return None
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[len(root) + 1 :].split("/")]


def _child(node: Any, token: str) -> tuple[bool, Any]:
    """(found, value) of one step into a dict (by key) or a list or tuple (by index)."""
    if isinstance(node, Mapping):
        return (token in node, node.get(token))
    if isinstance(node, (list, tuple)) and token.isdigit() and int(token) < len(node):
        return True, node[int(token)]
    return False, None


def _replaced_at(node: Any, tokens: Sequence[str], value: Any) -> tuple[bool, Any]:
    """(found, a copy of `node` with the value at `tokens` replaced by `value`)."""
    if not tokens:
        return True, value
    found, child = _child(node, tokens[0])
    if not found:
        return False, node
    found, new = _replaced_at(child, tokens[1:], value)
    if isinstance(node, Mapping):
        return found, {**node, tokens[0]: new}
    copy = list(node)
    copy[int(tokens[0])] = new
    return found, copy


def _whole_span(pointer: str, value: Any) -> Span:
    """The span reported for a value masked whole: all of a string, else an empty one."""
    return Span(pointer, 0, len(value) if isinstance(value, str) else 0, "REDACTED")


def _masked_tree(
    node: Any, root: str, targets: Sequence[Target], mask: Mask
) -> tuple[Any, list[Span]]:
    """A JSON tree (arguments or structured content) masked: texts first, then whole values."""
    plan = _text_plan(targets, mask, mask.pointers)
    for pointer, (text, _) in plan.items():
        tokens = _tokens(pointer, root)
        if tokens is not None:
            _, node = _replaced_at(node, tokens, text)
    spans = [span for _, found in plan.values() for span in found]
    for pointer in dict.fromkeys(mask.pointers):
        tokens = _tokens(pointer, root)
        if tokens is None:
            continue
        original = _value_at(node, tokens)
        found, node = _replaced_at(node, tokens, REDACTED)
        if found:
            spans.append(_whole_span(pointer, original))
    return node, spans


def _value_at(node: Any, tokens: Sequence[str]) -> Any:
    for token in tokens:
        _, node = _child(node, token)
    return node


def _expanded(pointers: Sequence[str], root: str, children: Sequence[str]) -> tuple[str, ...]:
    """Pointer masks with the document's root replaced by each of its children's pointers.

    The arguments stay a mapping and the content a list of blocks, so masking all of one
    masks every value in it.
    """
    out: list[str] = []
    for pointer in pointers:
        out.extend(f"{root}/{c}" for c in children) if pointer == root else out.append(pointer)
    return tuple(dict.fromkeys(out))


def masked_arguments(arguments: Mapping[str, Any], mask: Mask) -> tuple[dict[str, Any], list[Span]]:
    """A masked copy of the arguments, and the spans replaced (in the original texts)."""
    targets = argument_targets(arguments)
    pointers = _expanded(mask.pointers, ARGUMENTS, [escape(str(k)) for k in arguments])
    whole = Mask(mask.spans, mask.patterns, pointers)
    masked, spans = _masked_tree(dict(arguments), ARGUMENTS, targets, whole)
    return dict(masked), _in_order(spans, targets)


def _masked_block(
    block: ContentBlock, pointer: str, plan: Mapping[str, tuple[str, list[Span]]]
) -> ContentBlock:
    """A content block with its text masked as planned (`_meta` and the rest copied)."""
    if isinstance(block, TextContent) and f"{pointer}/text" in plan:
        return block.model_copy(update={"text": plan[f"{pointer}/text"][0]})
    if (
        isinstance(block, EmbeddedResource)
        and isinstance(block.resource, TextResourceContents)
        and f"{pointer}/resource/text" in plan
    ):
        resource = block.resource.model_copy(update={"text": plan[f"{pointer}/resource/text"][0]})
        return block.model_copy(update={"resource": resource})
    return block


def _whole_block(
    block: ContentBlock, pointer: str, whole: Sequence[str]
) -> tuple[ContentBlock, Span] | None:
    """The block as a pointer mask leaves it, and the span reported; None when none names it.

    A pointer to the block replaces it by a text block `[REDACTED]`; a pointer to its text
    replaces the text only.
    """
    target = _block_target(block, pointer)
    if pointer in whole:
        return TextContent(type="text", text=REDACTED), _whole_span(pointer, None)
    if target is None or target.pointer not in whole:
        return None
    if isinstance(block, EmbeddedResource):
        resource = block.resource.model_copy(update={"text": REDACTED})
        return block.model_copy(update={"resource": resource}), _whole_span(
            target.pointer, target.text
        )
    return block.model_copy(update={"text": REDACTED}), _whole_span(target.pointer, target.text)


def masked_result(result: CallToolResult, mask: Mask) -> tuple[CallToolResult, list[Span]]:
    """A masked copy of the result, and the spans replaced (in the original texts)."""
    targets, _ = result_targets(result)
    pointers = _expanded(mask.pointers, CONTENT, [str(i) for i in range(len(result.content))])
    content_targets = [t for t in targets if t.pointer.startswith(CONTENT + "/")]
    plan = _text_plan(content_targets, mask, pointers)
    spans = [span for _, found in plan.values() for span in found]
    content: list[ContentBlock] = []
    for index, block in enumerate(result.content):
        pointer = f"{CONTENT}/{index}"
        whole = _whole_block(block, pointer, pointers)
        if whole is not None:
            spans.append(whole[1])
        content.append(whole[0] if whole is not None else _masked_block(block, pointer, plan))
    structured = result.structured_content
    if structured is not None:
        structured_targets = [t for t in targets if t.pointer.startswith(STRUCTURED)]
        structured, found = _masked_tree(structured, STRUCTURED, structured_targets, mask)
        spans.extend(found)
    update = {"content": content, "structured_content": structured}
    return result.model_copy(update=update), _in_order(spans, targets)


def _in_order(spans: Sequence[Span], targets: Sequence[Target]) -> list[Span]:
    """Spans in document order: by their target's position, then by start."""
    rank = {t.pointer: i for i, t in enumerate(targets)}
    return sorted(spans, key=lambda s: (rank.get(s.pointer, len(rank)), s.pointer, s.start))
