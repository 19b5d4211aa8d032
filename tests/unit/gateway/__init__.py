"""Tests of the MCP gateway."""
