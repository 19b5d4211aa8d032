"""The upstream result with its `claimwatch` note attached: structured, and as one text block.

The upstream content and structured content are kept as they came; the note goes under
the `claimwatch` key of `structuredContent` (merged into a note already there, such as
governance's) and its sentence (`wording.text_block`) is
appended as one text block. With `on_escalate: error`, a decision whose action is
`escalate` turns the result into an error result (`isError`), the sentence saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent

from claimwatch.gateway.tools_config import OnEscalate
from claimwatch.gateway.wording import text_block

#: The key of `structuredContent` that holds the note.
NOTE_KEY = "claimwatch"


def annotated(
    result: CallToolResult, note: Mapping[str, Any], on_escalate: OnEscalate = "annotate"
) -> CallToolResult:
    """A copy of `result` carrying `note`; an error result when it escalates and says so."""
    prior = (result.structured_content or {}).get(NOTE_KEY)
    merged = {**prior, **note} if isinstance(prior, Mapping) else dict(note)
    structured = {**(result.structured_content or {}), NOTE_KEY: merged}
    content = [*result.content, TextContent(type="text", text=text_block(note))]
    escalates = note.get("arbitrated") is True and note.get("action") == "escalate"
    is_error = result.is_error or (on_escalate == "error" and escalates)
    return result.model_copy(
        update={"content": content, "structured_content": structured, "is_error": is_error}
    )
