"""Claim values per field type: one module per kind of value, joined in `registry`."""
