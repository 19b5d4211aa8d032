"""The gate a governed tool call passes twice: on its arguments, and on its result.

The gateway asks the gate before it forwards a call (`on_arguments`) and again before the
result reaches the arbitration hook and the agent (`on_result`). A gate answers with what
to forward or return, or with the error result that refuses it. `OPEN` governs nothing:
the gateway without a `governance:` section uses it, and ungoverned tools never reach it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcp.types import CallToolResult


@dataclass(frozen=True)
class Gated:
    """The arguments phase's answer.

    `refused` set: the call is not forwarded and the agent gets that error result.
    Otherwise `arguments` are forwarded (as sent, or masked). `note` is the phase's
    governance note, carried to the result so that the agent sees both phases.
    """

    arguments: dict[str, Any]
    refused: CallToolResult | None = None
    note: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Checked:
    """The result phase's answer: `passed` False means `result` is the refusal (withheld)."""

    result: CallToolResult
    passed: bool = True


class Gate(Protocol):
    """What the gateway asks of governance; any exception it raises denies the call."""

    def governs(self, tool: str) -> bool:
        """Whether calls of this exposed tool name pass the gate at all."""
        ...

    async def on_arguments(
        self, tool: str, server: str | None, arguments: dict[str, Any]
    ) -> Gated: ...

    async def on_result(
        self, tool: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked: ...

    async def aclose(self) -> None: ...


class OpenGate:
    """Governs nothing: every call is forwarded and returned as it is."""

    def governs(self, tool: str) -> bool:
        return False

    async def on_arguments(self, tool: str, server: str | None, arguments: dict[str, Any]) -> Gated:
        return Gated(arguments)

    async def on_result(
        self, tool: str, server: str | None, gated: Gated, result: CallToolResult
    ) -> Checked:
        return Checked(result)

    async def aclose(self) -> None:
        return None


#: The gate of a gateway without governance.
OPEN: Final = OpenGate()
