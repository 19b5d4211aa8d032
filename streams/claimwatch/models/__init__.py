"""Pydantic event models of claimwatch (claims, policy, decisions) and their JSON Schemas."""
