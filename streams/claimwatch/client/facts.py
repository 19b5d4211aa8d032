"""A worker's fact pages over HTTP: the current decision of a fact, or the one covering claims.

`GET /facts/{subject}/{field}[?covering=ID,...&wait=S]` on any worker (it forwards to the
fact's owner). The answer is an `Answer`: 200 with the decision (covering the ids, when
given), 404 when the fact has none, 408 when none covered the ids within the wait (with the
current decision, if any). A worker that cannot be reached or is not ready is a
`WorkerUnavailable` (`connected` False when no connection could be made at all: nothing
listening, a name that does not resolve); a query the worker refuses is a `ValueError`
with its reason; a claim it dead-lettered (422: it will never be decided) a `ClaimRefused`
naming the reason; a worker holding as many waiting requests as it takes (429) a
`WorkerBusy`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlsplit

import aiohttp

from claimwatch.core.covering import MAX_WAIT_S, missing

#: The worker asked when none is named: `CLAIMWATCH_WORKER_URL`, else the local default port.
DEFAULT_WORKER_URL: Final = "http://127.0.0.1:6066"
#: Seconds an answer may take beyond the wait it was asked for.
SLACK_S: Final = 10.0


def env_worker_url() -> str:
    """The worker URL from `CLAIMWATCH_WORKER_URL`, else `DEFAULT_WORKER_URL`."""
    return os.environ.get("CLAIMWATCH_WORKER_URL") or DEFAULT_WORKER_URL


def checked_worker_url(url: str | None = None) -> str:
    """The worker URL to ask (`url`, else `env_worker_url`), without a trailing slash.

    Raises ValueError saying what a valid one looks like when it is not `http(s)://HOST[:PORT]`
    (a missing scheme, a misspelt one, no host, a port that is no number), so that a
    misconfiguration is told when the client is made, not as a timeout later.
    """
    given = env_worker_url() if url is None else url
    from_env = url is None and bool(os.environ.get("CLAIMWATCH_WORKER_URL"))
    where = "CLAIMWATCH_WORKER_URL" if from_env else "worker URL"
    problem = _url_problem(given)
    if problem is None:
        return given.rstrip("/")
    hint = f"; did you mean http://{given}?" if "://" not in given and given.strip() else ""
    raise ValueError(
        f"{where} {given!r} {problem}: a valid one looks like {DEFAULT_WORKER_URL} (the "
        f"address of a running `claimwatch worker`, its --web-port){hint}"
    )


def _url_problem(url: str) -> str | None:
    """Why `url` is no worker URL, or None when it is one."""
    if not url.strip():
        return "is empty"
    try:
        parts = urlsplit(url)
        port = parts.port  # a port that is no number raises here
    except ValueError as exc:
        return f"cannot be read ({exc})"
    if "://" not in url:
        return "has no http:// or https:// scheme"
    if parts.scheme not in ("http", "https"):
        return f"has the scheme {parts.scheme!r}, not http or https"
    if not parts.hostname:
        return "names no host"
    if port == 0:
        return "has port 0"
    if parts.query or parts.fragment:
        return "has a query or fragment (give the worker's address only)"
    return None


class WorkerUnavailable(ConnectionError):
    """No worker answered at the URL, or it is not ready (recovering, owner unknown).

    `connected` is False when no connection could be made at all (connection refused, a
    host name that does not resolve, a connect timeout): nothing is listening there.
    """

    def __init__(self, message: str, *, connected: bool = True) -> None:
        super().__init__(message)
        self.connected = connected


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
        """Ask `worker_url`, else CLAIMWATCH_WORKER_URL, else the local default.

        ValueError when it is no http(s) URL (see `checked_worker_url`).
        """
        self.url = checked_worker_url(worker_url)
        #: whether a worker has answered at this URL (any HTTP status) since this was made
        self.answered = False
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
        wait = max(0.0, min(wait, MAX_WAIT_S))
        params = {"wait": f"{wait:.3f}"}
        if covering is not None:
            params["covering"] = ",".join(covering)
        status, retry_after, body = await self._get(
            fact_path(subject, field_name), params, wait + SLACK_S
        )
        return _answer(self.url, status, body, list(covering or ()), retry_after)

    async def probe(self) -> None:
        """Make sure a worker answers at the URL (`GET /health`, any status will do).

        Raises `WorkerUnavailable` when no connection can be made (nothing listening, a
        host that does not resolve); any other trouble is left to the asks that follow.
        """
        try:
            await self._get("/health", {}, SLACK_S)
        except WorkerUnavailable as exc:
            if not exc.connected:
                raise

    async def _get(
        self, path: str, params: dict[str, str], seconds: float
    ) -> tuple[int, str | None, Any]:
        """(status, Retry-After, JSON body or None) of one GET of the worker's `path`."""
        if self._session is None:
            raise RuntimeError("FactPages is used outside `async with`")
        timeout = aiohttp.ClientTimeout(total=seconds)
        try:
            async with self._session.get(self.url + path, params=params, timeout=timeout) as got:
                status, retry_after = got.status, got.headers.get("Retry-After")
                try:
                    body: Any = await got.json(content_type=None)
                except ValueError:  # not JSON: a page of something else at that address
                    body = None
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            raise WorkerUnavailable(
                f"no worker at {self.url} ({exc.strerror or exc})."
                " Start one (`claimwatch worker --policy POLICY`), or point the client at a "
                "running one (worker_url=, --worker-url, CLAIMWATCH_WORKER_URL)",
                connected=False,
            ) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise WorkerUnavailable(f"no answer from the worker at {self.url}: {reason}") from None
        self.answered = True
        return status, retry_after, body


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
