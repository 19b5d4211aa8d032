"""What a check can read of a call (targets) and what a decision masks in it.

A target is one string of the phase's document, named by an RFC 6901 pointer: the
arguments (`/arguments/body`, `/arguments/cc/0`) or the result (`/content/0/text`,
`/content/2/resource/text`, `/structured/patient/note`). Masks name spans of targets,
patterns to find in them, or whole values; masking replaces them right to left with
`[LABEL]` and reports what it replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult


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


def argument_targets(arguments: Mapping[str, Any]) -> tuple[Target, ...]:
    """Every string leaf of the arguments, depth first, keys in order."""
    raise NotImplementedError


def result_targets(result: CallToolResult) -> tuple[tuple[Target, ...], tuple[str, ...]]:
    """The result's strings, and the pointers of blocks no check can read (images, blobs)."""
    raise NotImplementedError


def masked_arguments(arguments: Mapping[str, Any], mask: Mask) -> tuple[dict[str, Any], list[Span]]:
    """A masked copy of the arguments, and the spans replaced (in the original texts)."""
    raise NotImplementedError


def masked_result(result: CallToolResult, mask: Mask) -> tuple[CallToolResult, list[Span]]:
    """A masked copy of the result, and the spans replaced (in the original texts)."""
    raise NotImplementedError
