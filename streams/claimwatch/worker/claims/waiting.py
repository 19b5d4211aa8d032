"""Requests waiting for a fact's decision that covers given claims: woken by the decision.

A `GET /facts/...?covering=...&wait=...` on the worker that owns the fact registers here;
the claims agent offers each decision it makes (after sending it), and a waiter whose
claim ids it covers is answered with it at once. Nothing polls: a waiter sleeps on its
future until a decision covers it, one of its claims is refused, or its time is up.

A claim dead-lettered with no decision to come (a bad signature, a claim id reused with
other content) is *refused*: its waiters are answered at once with the reason, and the
refusal is remembered for a while (bounded), so that a request arriving just after it is
answered too instead of waiting in vain.

The waiters are bounded: at most `most` on the worker and `most_per_fact` per fact; one
more is refused with `Crowded`. A decision touches only the waiters it may answer: each
waiter is filed under one of its ids that no decision offered so far listed, and a
decision looks only at the waiters filed under ids it lists.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from claimwatch.core.covering import claim_ids

Decision = Mapping[str, Any]

#: Seconds a client is told to wait before it asks again when the waiters are full.
RETRY_AFTER_S: Final = 1
#: How long a refusal is remembered, how many are, and the longest reason kept.
REMEMBER_S: Final = 60.0
REMEMBER_MOST: Final = 4096
REASON_CHARS: Final = 500
#: The key under which a waiter with no ids is filed (any decision covers it).
_ANY: Final = ""


@dataclass(frozen=True, slots=True)
class Refused:
    """A claim that was dead-lettered with no decision to come, and why."""

    claim_id: str
    reason: str


class Crowded(Exception):
    """No room for one more waiter; the message says which bound was reached."""

    retry_after_s = RETRY_AFTER_S


@dataclass(eq=False, slots=True)
class _Waiter:
    ids: tuple[str, ...]
    future: asyncio.Future[Decision | Refused]
    #: the id it is filed under (`_ANY` when it has none)
    filed: str = _ANY


@dataclass(slots=True)
class _Fact:
    """The waiters of one fact, filed by one id each that they still lack."""

    filed: dict[str, set[_Waiter]] = field(default_factory=dict)
    count: int = 0

    def file(self, waiter: _Waiter, under: str) -> None:
        waiter.filed = under
        self.filed.setdefault(under, set()).add(waiter)

    def unfile(self, waiter: _Waiter) -> None:
        group = self.filed.get(waiter.filed)
        if group is not None:
            group.discard(waiter)
            if not group:
                del self.filed[waiter.filed]


class Waiters:
    """The waiting requests of this worker, per fact key, and the claims refused lately."""

    def __init__(
        self,
        most: int,
        most_per_fact: int,
        *,
        remember_s: float = REMEMBER_S,
        remember_most: int = REMEMBER_MOST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.most = most
        self.most_per_fact = most_per_fact
        self._facts: dict[bytes, _Fact] = {}
        self._count = 0
        self._remember_s = remember_s
        self._remember_most = remember_most
        self._clock = clock
        #: (fact key, claim id) -> (until when it is remembered, reason), oldest first
        self._refused: OrderedDict[tuple[bytes, str], tuple[float, str]] = OrderedDict()

    def __bool__(self) -> bool:
        return self._count > 0

    def __len__(self) -> int:
        return self._count

    async def wait(
        self, key: bytes, ids: tuple[str, ...], seconds: float
    ) -> Decision | Refused | None:
        """The first decision of fact `key` made from now on that covers `ids`.

        Every decision covers no ids. A `Refused` when one of the ids is (or was lately)
        refused; None when no such decision came within `seconds`. Raises `Crowded` when
        the worker or the fact already has as many waiters as it takes.
        """
        refused = self.refusal(key, ids)
        if refused is not None:
            return refused
        fact = self._facts.get(key)
        if self._count >= self.most:
            raise Crowded(f"{self._count} requests wait on this worker (at most {self.most})")
        if fact is not None and fact.count >= self.most_per_fact:
            raise Crowded(
                f"{fact.count} requests wait for {key.decode(errors='replace')} "
                f"(at most {self.most_per_fact} per fact)"
            )
        if fact is None:
            fact = self._facts[key] = _Fact()
        future: asyncio.Future[Decision | Refused] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(ids, future)
        fact.file(waiter, ids[0] if ids else _ANY)
        fact.count += 1
        self._count += 1
        try:
            return await asyncio.wait_for(future, seconds)
        except TimeoutError:
            return None
        finally:
            fact.unfile(waiter)
            fact.count -= 1
            self._count -= 1
            if not fact.count:
                self._facts.pop(key, None)

    def offer(self, key: bytes, decision: Decision) -> None:
        """A decision of fact `key` was made and sent: answer the waiters it covers."""
        fact = self._facts.get(key)
        if fact is None:
            return
        listed = claim_ids(decision)
        # the ids both listed and filed under, walking the shorter of the two
        shorter, longer = (
            (listed, fact.filed.keys())
            if len(listed) <= len(fact.filed)
            else (fact.filed.keys(), listed)
        )
        touched = [i for i in shorter if i in longer]
        if _ANY in fact.filed:
            touched.append(_ANY)
        for filed in touched:
            for waiter in list(fact.filed.get(filed, ())):
                fact.unfile(waiter)
                lacking = next((i for i in waiter.ids if i not in listed), None)
                if lacking is not None:
                    fact.file(waiter, lacking)  # not listed: not among `touched`
                elif not waiter.future.done():
                    waiter.future.set_result(decision)

    def refuse(self, key: bytes, claim_id: str, reason: str) -> None:
        """Claim `claim_id` of fact `key` was dead-lettered and will not be decided.

        Its waiters are answered with the reason now; later ones, for a while.
        """
        reason = reason[:REASON_CHARS]
        self._forget_old()
        self._refused[(key, claim_id)] = (self._clock() + self._remember_s, reason)
        self._refused.move_to_end((key, claim_id))
        while len(self._refused) > self._remember_most:
            self._refused.popitem(last=False)
        fact = self._facts.get(key)
        if fact is None:
            return
        refused = Refused(claim_id, reason)
        for group in list(fact.filed.values()):  # at most `most_per_fact` waiters
            for waiter in group:
                if claim_id in waiter.ids and not waiter.future.done():
                    waiter.future.set_result(refused)

    def refusal(self, key: bytes, ids: tuple[str, ...]) -> Refused | None:
        """The refusal of the first of `ids` refused lately, if any."""
        if not self._refused:
            return None
        self._forget_old()
        for claim_id in ids:
            remembered = self._refused.get((key, claim_id))
            if remembered is not None:
                return Refused(claim_id, remembered[1])
        return None

    def _forget_old(self) -> None:
        now = self._clock()
        while self._refused:
            until, _reason = next(iter(self._refused.values()))
            if until > now:
                return
            self._refused.popitem(last=False)
