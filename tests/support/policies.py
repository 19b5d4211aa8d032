"""Policies the tests build in code."""

from __future__ import annotations

from typing import Any

from claimwatch.core.policy import CompiledPolicy
from claimwatch.models.policy import Policy


def policy_with(**field: Any) -> CompiledPolicy:
    """A policy with two independent owners of `payment_status` (a replication split)."""
    return CompiledPolicy(
        Policy.model_validate(
            {
                "policy_version": "test-1",
                "sources": {
                    "ledger-a": {"authority": "system_of_record", "lineage": "a"},
                    "ledger-b": {"authority": "system_of_record", "lineage": "b"},
                    "cache": {"authority": "cached", "lineage": "a"},
                },
                "fields": {
                    "payment_status": {
                        "type": "enum",
                        "values": ["paid", "unpaid"],
                        "freshness": "60s",
                        **field,
                    }
                },
            }
        )
    )


def billing_policy(version: str, *values: str) -> str:
    """Policy YAML: `billing-api` (lineage `ledger`) owns payment_status, an enum of `values`.

    The field is consequential; freshness 5m, and settle 0s decides on every claim.
    """
    return (
        f"policy_version: {version}\n"
        "defaults: {freshness: 5m, settle: 0s}\n"
        "sources:\n"
        "  billing-api: {authority: system_of_record, lineage: ledger}\n"
        "fields:\n"
        f"  payment_status: {{type: enum, values: [{', '.join(values)}], consequential: true,\n"
        "                   owner: billing-api}\n"
    )
