"""Pages about a key this worker does not hold: forwarded to the worker that owns it."""

from __future__ import annotations

from typing import Any, Final

import aiohttp
import yarl
from aiohttp import web as aioweb

from claimwatch.core.covering import QueryError, wait_seconds
from claimwatch.wire.topics import partition_for
from claimwatch.worker.app import Pipeline
from claimwatch.worker.pages import recovering

#: Seconds a forwarded page may take beyond the wait it asks for.
FORWARD_SLACK_S: Final = 5.0
#: The headers of the owner's answer a forwarded page passes on.
FORWARDED_HEADERS: Final = ("Content-Type", "Retry-After", "X-Claimwatch-Missing")


async def answer_elsewhere(pipe: Pipeline, key: bytes, web: Any, request: Any) -> Any | None:
    """The answer of a page about `key` when this worker cannot give it, else None.

    Forwarded to the worker that owns the key's partition (tables keyed like `resolutions`
    share its partitions); 503 while this worker recovers or the owner is unknown.
    """
    app = pipe.app
    owner = _owner_url(app, pipe, key)
    if owner is not None and owner.rstrip("/") != str(app.conf.canonical_url).rstrip("/"):
        if request.headers.get("X-Claimwatch-Forwarded"):
            return web.json({"error": "partition owner unknown"}, status=503)
        return await _forward(app, owner, request)
    if recovering(app):
        return web.json({"error": "recovering"}, status=503)
    return None


def _owner_url(app: Any, pipe: Pipeline, key: bytes) -> str | None:
    """The web URL of the worker that holds the key's partition, when known.

    The partition is the one every per-fact record of the key is written to
    (`partition_for`), found without the producer's metadata: Faust's `key_store` asks
    the producer, whose metadata lists only the topics it has sent to since its last
    refresh, and fails with a TypeError on a worker that has not yet written the
    resolutions topic.
    """
    topic = pipe.names.resolutions
    partition = partition_for(key, pipe.settings.partitions)
    for url, assigned in app.assignor.table_metadata(topic).items():
        if partition in assigned.get(topic, ()):
            return str(url)
    return None


async def _forward(app: Any, owner: str, request: Any) -> Any:
    """The owner's answer to the same request, through the worker's one HTTP session.

    The path is the request's raw one, as sent (`%2F` or `%3F` in a subject stay part of
    it), with its query (`covering`, `wait`): the owner answers as if asked itself. It
    may take the request's wait plus `FORWARD_SLACK_S`; an owner that does not answer
    in that time, or cannot be reached, is a 504 or 503 with the reason.
    """
    url = yarl.URL(owner.rstrip("/") + request.raw_path, encoded=True)
    timeout = aiohttp.ClientTimeout(total=_wait_of(request) + FORWARD_SLACK_S)
    headers = {"X-Claimwatch-Forwarded": "1"}
    try:
        async with app.http_client.get(url, headers=headers, timeout=timeout) as response:
            body = await response.read()
            kept = {k: v for k in FORWARDED_HEADERS if (v := response.headers.get(k)) is not None}
            return aioweb.Response(body=body, status=response.status, headers=kept)
    except TimeoutError:
        error = f"the worker owning this key ({owner}) did not answer in {timeout.total:g} s"
        return _json_error(error, 504)
    except (aiohttp.ClientError, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        return _json_error(f"the worker owning this key ({owner}) is unreachable: {reason}", 503)


def _wait_of(request: Any) -> float:
    """The seconds a request asks to wait (`wait`), 0 when it gives none or a bad one."""
    try:
        return wait_seconds(request.query.get("wait"))
    except QueryError:
        return 0.0


def _json_error(error: str, status: int) -> Any:
    return aioweb.json_response({"error": error}, status=status)
