"""Shared test support: the hostile corpus of claims-topic records and its policy."""
