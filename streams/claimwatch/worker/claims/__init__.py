"""Claims in, decisions out: the fact state per partition."""
