"""The governance stage: a `Gate` running each governed phase's checks and applying the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.gate import OPEN, Gate


def build_gate(
    raw: Mapping[str, Any] | None,
    tools_raw: Mapping[str, Any],
    source: ConfigSource,
    settings: GatewaySettings,
) -> Gate:
    """OPEN when nothing is governed; else the stage (PolicyError naming file, line, key)."""
    governed = any(isinstance(t, Mapping) and "checks" in t for t in tools_raw.values())
    if raw is None and not governed:
        return OPEN
    raise source.error(("governance",), "governance: not built yet")
