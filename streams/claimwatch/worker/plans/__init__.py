"""Plans whose steps wait on facts: blocked, unblocked, resumed."""
