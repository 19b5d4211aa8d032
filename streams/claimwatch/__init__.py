"""claimwatch: a streaming conflict monitor for AI-agent tool results."""
