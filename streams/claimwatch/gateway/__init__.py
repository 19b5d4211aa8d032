"""The MCP gateway: claimwatch between an agent and its MCP servers."""
