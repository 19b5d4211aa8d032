"""Kept import path: the MCP adapter lives in `streams.client.mcp_adapter`."""

from streams.client.mcp_adapter import (
    ErrorRules,
    MappingError,
    ToolMapping,
    ToolMappings,
    ToolResult,
    call_tool_claim,
    claim_from_result,
    error_status,
    load_mappings,
    parse_mappings,
    result_payload,
    result_text,
)

__all__ = [
    "ErrorRules",
    "MappingError",
    "ToolMapping",
    "ToolMappings",
    "ToolResult",
    "call_tool_claim",
    "claim_from_result",
    "error_status",
    "load_mappings",
    "parse_mappings",
    "result_payload",
    "result_text",
]
