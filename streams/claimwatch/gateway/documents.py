"""The document tools `mark_fetch`, `mark_publish` and `mark_append` (stub until they land)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from claimwatch.gateway.config import ConfigSource, GatewaySettings
from claimwatch.gateway.routing import OwnTool


class DocumentTools:
    """The tools over one long-lived document client, opened on first use."""

    def tools(self) -> Sequence[OwnTool]:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def build_documents(
    raw: Mapping[str, Any] | None, source: ConfigSource, settings: GatewaySettings
) -> DocumentTools | None:
    """None without a `documents:` section; else the tools (PolicyError on a bad section)."""
    if raw is None:
        return None
    raise source.error(("documents",), "documents: not built yet")
