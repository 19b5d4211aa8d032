"""A worker's fact pages over HTTP: the current decision of a fact, or the one covering claims.

`GET /facts/{subject}/{field}[?covering=ID,...&wait=S]` on any worker (it forwards to the
fact's owner). The answer is an `Answer`: 200 with the decision (covering the ids, when
given), 404 when the fact has none, 408 when none covered the ids within the wait (with the
current decision, if any). A worker that cannot be reached or is not ready is a
`WorkerUnavailable`; a query the worker refuses is a `ValueError` with its reason; a claim
it dead-lettered (422: it will never be decided) a `ClaimRefused` naming the reason; a
worker holding as many waiting requests as it takes (429) a `WorkerBusy`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import aiohttp

from claimwatch.core.covering import MAX_WAIT_S, missing

#: The worker asked when none is named: `CLAIMWATCH_WORKER_URL`, else the local default port.
DEFAULT_WORKER_URL: Final = "http://127.0.0.1:6066"
#: Seconds an answer may take beyond the wait it was asked for.
SLACK_S: Final = 10.0


def env_worker_url() -> str:
    """The worker URL from `CLAIMWATCH_WORKER_URL`, else `DEFAULT_WORKER_URL`."""
    return os.environ.get("CLAIMWATCH_WORKER_URL") or DEFAULT_WORKER_URL


class WorkerUnavailable(ConnectionError):
    """No worker answered at the URL, or it is not ready (recovering, owner unknown)."""


class ClaimRefused(ValueError):
    """A claim was dead-lettered (bad signature, id reused...): it will never be decided.

    `refused` maps each such claim id to the worker's reason.
    """

    def __init__(self, message: str, refused: dict[str, str]) -> None:
        super().__init__(message)
        self.refused = refused


class WorkerBusy(RuntimeError):
    """The worker holds as many waiting requests as it takes (429); ask again later."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class Answer:
    """A fact page's answer: its status, the decision it carries, the ids it does not cover."""

    status: int
    decision: dict[str, Any] | None
    missing: list[str] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        """Whether the answer is a decision covering every asked id."""
        return self.status == 200 and self.decision is not None


def fact_path(subject: str, field_name: str) -> str:
    """The page's path for one fact (both parts percent-encoded)."""
    return f"/facts/{quote(subject, safe='')}/{quote(field_name, safe='')}"


class FactPages:
    """Ask a worker for decisions; use as `async with FactPages(url) as pages:`."""

    def __init__(self, worker_url: str | None = None) -> None:
        self.url = (worker_url or env_worker_url()).rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> FactPages:
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def ask(
        self,
        subject: str,
        field_name: str,
        covering: Sequence[str] | None = None,
        wait: float = 0.0,
    ) -> Answer:
        """The fact's decision; with `covering`, once one covers those claim ids.

        The worker waits up to `wait` seconds (at most 30) for such a decision.
        """
        if self._session is None:
            raise RuntimeError("FactPages is used outside `async with`")
        wait = max(0.0, min(wait, MAX_WAIT_S))
        params = {"wait": f"{wait:.3f}"}
        if covering is not None:
            params["covering"] = ",".join(covering)
        url = self.url + fact_path(subject, field_name)
        timeout = aiohttp.ClientTimeout(total=wait + SLACK_S)
        try:
            async with self._session.get(url, params=params, timeout=timeout) as response:
                status = response.status
                retry_after = response.headers.get("Retry-After")
                body: Any = await response.json(content_type=None)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            reason = str(exc) or type(exc).__name__
            raise WorkerUnavailable(f"no answer from the worker at {self.url}: {reason}") from None
        return _answer(self.url, status, body, list(covering or ()), retry_after)


def _answer(
    url: str, status: int, body: Any, ids: list[str], retry_after: str | None = None
) -> Answer:
    """The answer of a page's status and JSON body."""
    decision = body if isinstance(body, dict) and "decision_id" in body else None
    error = body.get("error") if isinstance(body, dict) else None
    if status == 200 and decision is not None:
        return Answer(200, decision)
    if status in (404, 408):
        return Answer(status, decision, missing(decision, ids))
    if status == 400:
        raise ValueError(f"the worker refused the query: {error or body}")
    if status == 422:
        refused = body.get("refused") if isinstance(body, dict) else None
        reasons = {str(k): str(v) for k, v in refused.items()} if isinstance(refused, dict) else {}
        raise ClaimRefused(str(error or f"the worker at {url} refused a claim"), reasons)
    if status == 429:
        raise WorkerBusy(
            f"the worker at {url} is busy: {error or 'status 429'}", _seconds(retry_after)
        )
    if status == 503:
        raise WorkerUnavailable(f"the worker at {url} is not ready: {error or 'status 503'}")
    raise WorkerUnavailable(f"the worker at {url} answered {status}: {error or body}")


def _seconds(retry_after: str | None) -> float:
    """The seconds of a Retry-After header (1 when absent or not a number of seconds)."""
    try:
        seconds = float(retry_after or "")
    except ValueError:
        return 1.0
    return seconds if 0 <= seconds <= MAX_WAIT_S else 1.0
