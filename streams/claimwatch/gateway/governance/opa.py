"""The `opa` check (stub until its package lands)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance.checks import Argument, CallView, CheckEnv


class OpaCheck:
    """One configured `opa` check."""

    def __init__(self, name: str, timeout_s: float) -> None:
        self.name, self.timeout_s = name, timeout_s

    @classmethod
    def from_config(
        cls, name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv
    ) -> OpaCheck:
        raise NotImplementedError

    async def argue(self, call: CallView) -> Argument:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None
