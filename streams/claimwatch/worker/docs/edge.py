"""The edge between document requests and the pure document store: decode, apply, encode.

No Faust here: the agent hands in records of the `publish` topic and sends what comes back.
The table (a Faust table, a dict in tests) holds, per document, a head record and one
record per kept version, so no single value grows with the history:

- ``d/<path>``: ``{"partition", "version", "first", "content_hash", "answers"}`` (`first`:
  the oldest version kept; `answers`: the recent answers by request id, bounded)
- ``v/<n>/<path>``: version ``n`` (``version``, ``body``, ``content_hash``, ``request_id``)

Every value is bounded: a version by the body limit, a head by REMEMBERED_ANSWERS answers
of bounded size; the versions of a document by `max_versions` (the oldest are deleted).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from claimwatch.core.docstore import (
    DocLimits,
    DocState,
    Request,
    RequestError,
    Version,
    apply,
    check_path,
    validate,
)
from claimwatch.wire.codec import dumps, loads
from claimwatch.wire.topics import TopicNames, misplaced, partition_for
from claimwatch.worker.dead_letters import dead_letter, internal_error_reason
from claimwatch.worker.outgoing import Handled, Outgoing

HEAD_PREFIX: Final = b"d/"
VERSION_PREFIX: Final = b"v/"
#: Room a request's envelope (path, ids, keys) takes besides its body.
ENVELOPE_BYTES: Final = 4096
#: Largest request past the limit still read to answer its sender `rejected` (larger ones,
#: which the broker's default message limit refuses anyway, are dead-lettered only).
MAX_ANSWERED_BYTES: Final = 2 * 1024 * 1024

log = logging.getLogger(__name__)


def head_key(path: str) -> bytes:
    """The table key of a document's head record."""
    return HEAD_PREFIX + path.encode()


def version_key(path: str, number: int) -> bytes:
    """The table key of one version of a document."""
    return VERSION_PREFIX + f"{number}/".encode() + path.encode()


@dataclass(slots=True)
class DocsHandled(Handled):
    """What one record of the publish topic led to: records to send, counters, the response."""

    response: dict[str, Any] | None = None
    #: documents set aside because handling them raised (answered `error`)
    quarantined: int = 0


class Unreadable(ValueError):
    """A document's stored values do not decode (a forged or corrupted table record)."""


@dataclass(frozen=True, slots=True)
class Gone:
    """A version that existed and was dropped (beyond the versions a document keeps)."""

    reason: str


class DocsEdge:
    """Applies publish/append requests to the documents of a bytes table; answers by path.

    A record that is not a valid request (not JSON, missing path, body not a string, bad op
    or expected_version, over the size limit) goes to the dead-letter topic with its
    original bytes and the reason; when its path is valid it is answered `rejected` with the
    reason too. A request keyed otherwise than by its path, or sitting in another partition
    than the path's, is re-sent to its home partition first (with a request id fixed from
    its first position when it had none, so a redelivery of the original record is still
    applied once). Whatever raises while one document is loaded, changed or stored is
    confined to it: the request is answered `error` with `internal_error: <type>:
    <message>`, the document's cached state is dropped (its stored head too when its
    stored values do not decode, so it does not fail every later request), and the next
    record goes on. A failure of the table itself drops nothing stored.
    """

    def __init__(
        self,
        names: TopicNames,
        partitions: int,
        table: MutableMapping[bytes, bytes],
        cache_size: int = 128,
        max_versions: int | None = None,
        max_body_bytes: int | None = None,
    ) -> None:
        self.names = names
        self.partitions = partitions
        self.table = table
        defaults = DocLimits()
        self.limits = DocLimits(
            max_versions if max_versions is not None else defaults.max_versions,
            max_body_bytes if max_body_bytes is not None else defaults.max_body_bytes,
        )
        #: largest request record accepted (bytes): a body at the limit plus its envelope
        self.max_request_bytes = self.limits.max_body_bytes + ENVELOPE_BYTES
        self._cache: OrderedDict[str, tuple[DocState, int]] = OrderedDict()
        self._cache_size = cache_size

    def forget(self) -> None:
        """Drop cached documents (on rebalance, after recovery); re-read from the table."""
        self._cache.clear()

    # ------------------------------------------------------------------ reads

    def head(self, path: str) -> dict[str, Any] | None:
        """The head record of a document, or None when it does not exist."""
        raw = self.table.get(head_key(path))
        return None if raw is None else dict(loads(raw))

    def version(self, path: str, number: int | None = None) -> Version | None:
        """Version `number` of a document (None: the latest), or None when unknown or dropped."""
        found = self.lookup(path, number)
        return found if isinstance(found, Version) else None

    def lookup(self, path: str, number: int | None = None) -> Version | Gone | None:
        """Version `number` (None: the latest); Gone when it was dropped; None when unknown."""
        head = self.head(path)
        if head is None or not head["version"]:
            return None
        latest = int(head["version"])
        number = latest if number is None else number
        first = int(head.get("first", 1))
        if 1 <= number < first:
            return Gone(
                f"version {number} of {path} was dropped: a document keeps its latest "
                f"{self.limits.max_versions} versions ({first}..{latest} now; "
                "CLAIMWATCH_DOC_MAX_VERSIONS)"
            )
        raw = self.table.get(version_key(path, number))
        return None if raw is None else Version.from_obj(loads(raw))

    def state(self, path: str) -> tuple[DocState, int]:
        """What applying a request needs of a document, and its oldest version kept.

        Only the head and the current version are read (cached), never the history. A
        stored value that does not decode raises `Unreadable`.
        """
        cached = self._cache.get(path)
        if cached is not None:
            self._cache.move_to_end(path)
            return cached
        raw_head = self.table.get(head_key(path))
        found: tuple[DocState, int] = (DocState(path), 1)
        if raw_head is not None:
            try:
                head = dict(loads(raw_head))
                number = int(head["version"])
            except Exception as exc:
                raise Unreadable(f"head of {path!r}: {type(exc).__name__}: {exc}") from exc
            raw = self.table.get(version_key(path, number)) if number else None
            try:
                versions = (Version.from_obj(loads(raw)),) if raw is not None else ()
                if number and raw is None:
                    raise LookupError(f"version {number} missing from the table")
                # heads written before answers were indexed remember conflicts only
                pairs = head.get("answers", head.get("conflicts")) or ()
                answers = {str(rid): dict(response) for rid, response in pairs}
                found = (DocState(path, versions, answers), int(head.get("first", 1)))
            except Exception as exc:
                raise Unreadable(f"document {path!r}: {type(exc).__name__}: {exc}") from exc
        self._remember(path, found)
        return found

    # ------------------------------------------------------------------ writes

    def handle(self, partition: int, offset: int, key: bytes | None, value: bytes) -> DocsHandled:
        """Process one record of the publish topic."""
        out = DocsHandled()
        origin = (self.names.publish, partition, offset)
        data: object = None
        try:
            too_large = len(value) > self.max_request_bytes
            if not too_large or len(value) <= MAX_ANSWERED_BYTES:
                try:  # a request past the limit is still read, to answer its sender
                    data = orjson.loads(value)
                except orjson.JSONDecodeError as exc:
                    if not too_large:
                        raise RequestError(f"not JSON: {exc}") from None
            if too_large:
                raise RequestError(
                    f"message of {len(value)} bytes exceeds the {self.max_request_bytes}-byte "
                    "limit (CLAIMWATCH_DOC_MAX_BODY_BYTES plus 4096)"
                )
            request = validate(data)
        except RequestError as exc:
            out.events.append("doc_dead_letter")
            out.sends.append(dead_letter(self.names, origin, key, value, str(exc)))
            self._refused(data, partition, offset, str(exc), out)
            return out
        request_id = request.request_id or f"{self.names.publish}:{partition}:{offset}"
        wanted = request.path.encode()
        home = misplaced(wanted, key, partition, self.partitions)
        if home is not None:
            assert isinstance(data, dict)  # validate() accepted it: a JSON object
            out.events.append("doc_rerouted")
            fixed = value if request.request_id else dumps({**data, "request_id": request_id})
            out.sends.append(Outgoing(self.names.publish, wanted, fixed, home))
            return out
        response = self._apply(request, request_id, partition, out)
        out.response = response
        out.sends.append(Outgoing(self.names.publish_results, wanted, dumps(response), partition))
        return out

    def _apply(
        self, request: Request, request_id: str, partition: int, out: DocsHandled
    ) -> dict[str, Any]:
        """Apply one request to its document and store the change; confined when it raises."""
        path = request.path
        stage = "reading"
        try:
            before, first = self.state(path)
            stage = "changing"
            after, response = apply(before, request, request_id, self.limits)
            if after is before:
                out.events.append("doc_duplicate")
                return response
            stage = "storing"
            self._store(before, first, after, partition)
        except Unreadable as exc:
            return self._quarantine(path, request_id, partition, "decoding", exc, out)
        except Exception as exc:
            return self._quarantine(path, request_id, partition, stage, exc, out)
        out.events.append("doc_" + str(response["status"]))
        return response

    def _quarantine(
        self,
        path: str,
        request_id: str,
        partition: int,
        stage: str,
        exc: Exception,
        out: DocsHandled,
    ) -> dict[str, Any]:
        """The answer to a request whose document failed; the document's state dropped."""
        log.error(
            "%s document %r on %s[%d] raised; the request is answered `error` and the "
            "document's %s state dropped",
            stage,
            path,
            self.names.publish,
            partition,
            "stored" if stage == "decoding" else "cached",
            exc_info=exc,
        )
        out.events.append("doc_quarantined")
        out.quarantined += 1
        self._cache.pop(path, None)
        if stage == "decoding":  # unreadable as stored: it would fail every request again
            self.table.pop(head_key(path), None)
        return {
            "status": "error",
            "path": path,
            "version": 0,
            "content_hash": None,
            "request_id": request_id,
            "reason": internal_error_reason(exc),
        }

    def _refused(
        self, data: object, partition: int, offset: int, reason: str, out: DocsHandled
    ) -> None:
        """Answer an invalid request `rejected` when its path is valid (else the DLQ only)."""
        if not isinstance(data, Mapping):
            return
        try:
            path = check_path(data.get("path"))
        except RequestError:
            return
        rid = data.get("request_id")
        if not isinstance(rid, str) or not 0 < len(rid) <= 128:
            rid = f"{self.names.publish}:{partition}:{offset}"
        response = {
            "status": "rejected",
            "path": path,
            "version": 0,
            "content_hash": None,
            "request_id": rid,
            "reason": reason,
        }
        out.response = response
        home = partition_for(path.encode(), self.partitions)
        out.sends.append(Outgoing(self.names.publish_results, path.encode(), dumps(response), home))

    def _store(self, before: DocState, first: int, after: DocState, partition: int) -> None:
        """Write the new versions, then the head, then drop the versions beyond the bound.

        A head never names a missing version: new versions are written before it, and old
        ones deleted only once it no longer names them.
        """
        for version in after.versions:
            if version.number > before.version:
                self.table[version_key(after.path, version.number)] = dumps(version.to_obj())
        current = after.current
        keep_from = max(first, after.version - self.limits.max_versions + 1, 1)
        self.table[head_key(after.path)] = dumps(
            {
                "partition": partition,
                "version": after.version,
                "first": keep_from,
                "content_hash": current.content_hash if current is not None else None,
                "answers": [[rid, dict(r)] for rid, r in after.answers.items()],
            }
        )
        for number in range(first, keep_from):
            self.table.pop(version_key(after.path, number), None)
        held = (current,) if current is not None else ()
        self._remember(after.path, (DocState(after.path, held, after.answers), keep_from))

    def _remember(self, path: str, found: tuple[DocState, int]) -> None:
        self._cache[path] = found
        self._cache.move_to_end(path)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
