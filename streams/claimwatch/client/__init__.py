"""What agents and their builders import: the publisher, the docs client, the MCP adapter."""
