"""Fakes of the gateway's collaborators: a `claimwatch.Client` and decision records."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from claimwatch.core.claim import fact_key


class FakePublisher:
    """Records what is sent; `down` makes every send fail as a broker that is away."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, bytes]] = []
        self.down = False

    async def send(self, key: bytes, value: bytes) -> None:
        if self.down:
            raise ConnectionError("no broker (fake)")
        self.sent.append((key, value))

    async def flush(self) -> None:
        return None


class FakeClient:
    """A `Client` whose `decide` answers with `answer(claim)` (a decision record or raise).

    `opens` counts the opens; `broken_open` makes opening raise it (the broker down).
    """

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], Any] | None = None,
        *,
        broken_open: BaseException | None = None,
        publishes: bool = True,
    ) -> None:
        self.answer = answer or (lambda claim: decision(claim, "resolved"))
        self.broken_open = broken_open
        #: whether `decide` tells its caller the claims are out before it waits (as a
        #: reachable broker does); False: the wait starts before the broker took them
        self.publishes = publishes
        self.publisher = FakePublisher()
        self.decided: list[dict[str, Any]] = []
        self.opens = 0
        self.closed = False

    def __call__(self, _settings: object) -> FakeClient:
        """Act as the arbitrator's client factory: the same fake every time."""
        return self

    async def __aenter__(self) -> FakeClient:
        if self.broken_open is not None:
            raise self.broken_open
        self.opens += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.closed = True

    async def decide(
        self,
        claims: Iterable[Mapping[str, Any]],
        timeout: float = 30.0,
        on_sent: Callable[[], None] | None = None,
    ) -> dict[str, dict[str, Any]]:
        claims = list(claims)
        if self.publishes and on_sent is not None:
            on_sent()
        decided = {}
        for claim in claims:
            self.decided.append(dict(claim))
            answer = self.answer(dict(claim))
            if asyncio.iscoroutine(answer):
                answer = await answer
            if isinstance(answer, BaseException):
                raise answer
            decided[fact_key(claim["subject"], claim["field"])] = answer
        return decided


def decision(
    claim: Mapping[str, Any],
    outcome: str,
    *,
    action: str = "proceed",
    others: Iterable[Mapping[str, Any]] = (),
    reason: str = "the owner decides",
) -> dict[str, Any]:
    """A decision record covering `claim` (and the `others` claims), as a worker writes one."""
    competing = outcome == "conflict"
    claims = [
        {
            "claim_id": c["claim_id"],
            "source": c["source"],
            "status": c.get("status", "ok"),
            **({"value": c["value"]} if "value" in c else {}),
            "disposition": "contradicting" if competing else ("won" if i == 0 else "outranked"),
        }
        for i, c in enumerate([claim, *others])
    ]
    return {
        "decision_id": "d-" + str(claim["claim_id"])[-6:],
        "subject": claim["subject"],
        "field": claim["field"],
        "outcome": outcome,
        "value": None if competing else claim.get("value"),
        "exists": None if competing else True,
        "action": action,
        "reason": reason,
        "claims": claims,
    }
