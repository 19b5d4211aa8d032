"""Governance at the gateway: checks argue about a tool call, the policy's rules decide."""
