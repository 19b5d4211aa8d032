"""The agent's client: publish claims, then wait for the decision of each fact that covers them.

    async with Client(worker_url="http://127.0.0.1:6066") as client:
        decisions = await client.decide(claims, timeout=10)

`decide` validates every claim first (an `InvalidClaim` sends none of them), signs them when
given a key, publishes them keyed by fact, then asks a worker for each fact's decision with
`covering=` the fact's claim ids, so the answer is known to have weighed them, whatever
became of them (won, outranked, rejected...). By default every claim that does not say
otherwise asks its fact to be decided on arrival (`"decide": "on_arrival"`): the worker
decides it at once on what has arrived, so `decide` returns without waiting out the fact's
settle window (the window still closes as usual, and its decision supersedes this one if a
later claim changed it). With `early=False` the claims are sent as they are, and a fact
with an open window is answered when the window closes. Nothing is polled: each request
waits on the worker for the decision, and is asked again only when the worker's 30 s
limit or an outage cut it short.
A claim the worker dead-lettered (a bad signature, a claim id reused with other content)
is never decided: `decide` raises `ClaimRefused` with the worker's reason as soon as every
fact is answered, instead of waiting out the timeout; a worker holding as many waiting
requests as it takes raises `WorkerBusy`.

A worker that is down is told at once: before its first publish, a `Client` makes sure a
worker answers at its URL, and raises `WorkerUnavailable` (nothing sent) when nothing is
listening there or the host does not resolve. Once a worker has answered, an outage
during a wait (a restart, a rebalance) is retried until the timeout, whose message names
the last outage. A fact still undecided at the timeout has its claims looked up in the
dead-letter topic (the records since this `decide` began): `DecisionTimeout` names each
claim found there with the worker's reason (a record the worker could not read, an
internal error, a fact set aside), which no fact page could say.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import orjson

from claimwatch.client.dead_letters import lookup
from claimwatch.client.facts import Answer, ClaimRefused, FactPages, WorkerBusy, WorkerUnavailable
from claimwatch.client.publisher import Publisher, asking, validate
from claimwatch.core.claim import fact_key
from claimwatch.core.covering import MAX_IDS
from claimwatch.models.claim import ClaimEnvelope, Decide

#: Seconds between two tries when the worker could not be reached.
RETRY_S: Final = 0.5


class DecisionTimeout(TimeoutError):
    """Some facts had no decision covering their claims in time.

    `pending` maps each such fact key to the claim ids its current decision does not list;
    `current` to that decision (None when the fact has none), `decided` the facts that were;
    `dead_lettered` each pending claim id found in the dead-letter topic to the worker's
    reason (a claim rejected on arrival is there too, and is decided when its fact's
    window closes).
    """

    def __init__(
        self,
        message: str,
        pending: dict[str, list[str]],
        current: dict[str, dict[str, Any] | None],
        decided: dict[str, dict[str, Any]],
        dead_lettered: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.pending = pending
        self.current = current
        self.decided = decided
        self.dead_lettered = dead_lettered or {}


class Client:
    """Publish claims and get their decisions; use as `async with Client(...) as client:`."""

    def __init__(
        self,
        worker_url: str | None = None,
        bootstrap: str | None = None,
        prefix: str | None = None,
        *,
        signing_key: bytes | None = None,
        signing_kid: str | None = None,
        **producer: Any,
    ) -> None:
        """ValueError when `worker_url` (else CLAIMWATCH_WORKER_URL) is no http(s) URL."""
        self.pages = FactPages(worker_url)  # a bad URL is refused before a producer is made
        self.publisher = Publisher(
            bootstrap, prefix, signing_key=signing_key, signing_kid=signing_kid, **producer
        )

    async def __aenter__(self) -> Client:
        await self.publisher.__aenter__()
        await self.pages.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.pages.__aexit__(*exc)
        finally:
            await self.publisher.__aexit__(*exc)

    async def decide(
        self,
        claims: Iterable[Mapping[str, Any] | ClaimEnvelope],
        timeout: float = 30.0,
        *,
        early: bool = True,
        on_sent: Callable[[], None] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Publish `claims`; the decision per fact (`subject|field`) that covers them.

        `early` (default): each claim without a `decide` key asks for its fact to be decided
        on arrival, and the first decision covering the claims is returned (later claims in
        the window may change it: the window's close decides as usual). `early=False`: the
        claims are sent as they are, and the answer waits for the fact's window to close
        (its `settle`, up to `max_delay`). Facts come in the order of their first claim.
        Raises `InvalidClaim` before sending anything when a claim is invalid,
        `WorkerUnavailable` (nothing sent) when no worker answers at the URL; once every
        fact is answered, `ClaimRefused` when the worker dead-lettered some claim (with each
        reason), `WorkerBusy` when it turned a request away (429), `DecisionTimeout` when
        some fact is not decided in `timeout` seconds (naming its claims found in the
        dead-letter topic). `on_sent` is called once the broker has taken every claim (a
        caller with its own deadline then knows the claims are out, whatever the wait gives).
        """
        publisher = self.publisher
        mode: Decide | None = "on_arrival" if early else None
        records = [
            validate(asking(c, mode), publisher.signing_key, publisher.signing_kid) for c in claims
        ]
        facts: dict[str, tuple[str, str, list[str]]] = {}
        for _key, value in records:
            sent = orjson.loads(value)
            subject, field_name = sent["subject"], sent["field"]
            ids = facts.setdefault(fact_key(subject, field_name), (subject, field_name, []))[2]
            if sent["claim_id"] not in ids:
                ids.append(sent["claim_id"])
        if not self.pages.answered:
            await self.pages.probe()
        started_ms = time.time_ns() // 1_000_000
        for record in records:  # validated (and signed) once, above
            await self.publisher.send(*record)
        await self.publisher.flush()
        if on_sent is not None:
            on_sent()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        answers = await asyncio.gather(
            *(self._covering(s, f, ids, deadline) for s, f, ids in facts.values())
        )
        decided: dict[str, dict[str, Any]] = {}
        pending: dict[str, list[str]] = {}
        current: dict[str, dict[str, Any] | None] = {}
        reasons = []
        _raise_refusals(facts, answers)
        for key, (answer, reason) in zip(facts, answers, strict=True):
            if isinstance(answer, Exception):
                continue
            if answer is not None and answer.covered and answer.decision is not None:
                decided[key] = answer.decision
            else:
                pending[key] = answer.missing if answer is not None else facts[key][2]
                current[key] = answer.decision if answer is not None else None
                reasons.append(f"{key}: {reason}")
        if pending:
            letters, unread = await lookup(
                publisher.bootstrap,
                publisher.names.dlq,
                started_ms,
                {key: set(ids) for key, ids in pending.items()},
            )
            raise DecisionTimeout(
                _timeout_message(timeout, reasons, letters, unread),
                pending,
                current,
                decided,
                letters,
            )
        return decided

    async def _covering(
        self, subject: str, field_name: str, ids: list[str], deadline: float
    ) -> tuple[Answer | ClaimRefused | WorkerBusy | None, str]:
        """The fact's decision covering `ids` by `deadline`, or the last answer and why not.

        A refused claim or a busy worker ends the wait at once: the error is the answer.
        """
        loop = asyncio.get_running_loop()
        answer: Answer | None = None
        reason = "no answer yet"
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return answer, reason
            try:
                answer = await self._ask_all(subject, field_name, ids, remaining)
            except WorkerUnavailable as exc:
                reason = str(exc)
                await asyncio.sleep(min(RETRY_S, max(0.0, deadline - loop.time())))
                continue
            except (ClaimRefused, WorkerBusy) as exc:
                return exc, str(exc)
            if answer.covered:
                return answer, "covered"
            if answer.decision is None:
                reason = "the fact has no decision yet"
            else:
                reason = f"its decision does not list {', '.join(answer.missing)} yet"

    async def _ask_all(self, subject: str, field_name: str, ids: list[str], wait: float) -> Answer:
        """One ask; a fact with more ids than one request takes is asked in parts."""
        answer = Answer(200, None)
        for start in range(0, len(ids), MAX_IDS):
            answer = await self.pages.ask(subject, field_name, ids[start : start + MAX_IDS], wait)
            if not answer.covered:
                return answer
        return answer


async def decide(
    claims: Iterable[Mapping[str, Any] | ClaimEnvelope],
    *,
    worker_url: str | None = None,
    bootstrap: str | None = None,
    prefix: str | None = None,
    timeout: float = 30.0,
    early: bool = True,
) -> dict[str, dict[str, Any]]:
    """Publish `claims`; the decision per fact that covers them, by a `Client` made for it.

    `early` as for `Client.decide`. A program that decides again and again keeps one
    `Client` open instead.
    """
    async with Client(worker_url, bootstrap, prefix) as client:
        return await client.decide(claims, timeout=timeout, early=early)


def _timeout_message(
    timeout: float, reasons: list[str], letters: Mapping[str, str], unread: str | None
) -> str:
    """What `DecisionTimeout` says: each fact's last state, and its dead-lettered claims."""
    message = f"no decision within {timeout:g} s for {len(reasons)} fact(s); " + "; ".join(reasons)
    if letters:
        named = "; ".join(f"claim {claim_id}: {reason}" for claim_id, reason in letters.items())
        message += f". Dead-lettered by the worker (see `claimwatch dlq`): {named}"
    elif unread is not None:
        message += f". The dead-letter topic could not be read ({unread})"
    return message


def _raise_refusals(
    facts: Mapping[str, Any], answers: Iterable[tuple[Answer | Exception | None, str]]
) -> None:
    """Raise what the worker refused: `ClaimRefused` (every refused claim), else `WorkerBusy`."""
    refused: dict[str, str] = {}
    reasons: list[str] = []
    busy: WorkerBusy | None = None
    for key, (answer, reason) in zip(facts, answers, strict=True):
        if isinstance(answer, ClaimRefused):
            refused.update(answer.refused)
            reasons.append(f"{key}: {reason}")
        elif isinstance(answer, WorkerBusy) and busy is None:
            busy = answer
    if refused or reasons:
        raise ClaimRefused("the worker dead-lettered claims: " + "; ".join(reasons), refused)
    if busy is not None:
        raise busy
