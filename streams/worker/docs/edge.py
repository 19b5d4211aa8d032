"""The edge between document requests and the pure document store: decode, apply, encode.

No Faust here: the agent hands in records of the `publish` topic and sends what comes back.
The table (a Faust table, a dict in tests) holds, per document, a head record and one
record per version, so no single value grows with the history:

- ``d/<path>``: ``{"partition", "version", "content_hash", "conflicts"}``
- ``v/<n>/<path>``: version ``n`` (``version``, ``body``, ``content_hash``, ``request_id``)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from streams.core.docstore import (
    MAX_BODY_BYTES,
    DocState,
    RequestError,
    Version,
    apply,
    validate,
)
from streams.wire.codec import dumps, loads
from streams.wire.topics import TopicNames, misplaced
from streams.worker.edge import Handled, Outgoing, dead_letter

HEAD_PREFIX: Final = b"d/"
VERSION_PREFIX: Final = b"v/"
#: Largest request record accepted (bytes): a body at the limit plus room for the envelope.
MAX_REQUEST_BYTES: Final = MAX_BODY_BYTES + 4096


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


class DocsEdge:
    """Applies publish/append requests to the documents of a bytes table; answers by path.

    A record that is not a valid request (not JSON, missing path, body not a string, bad op
    or expected_version, body over the size limit) goes to the dead-letter topic with its
    original bytes and the reason. A request keyed otherwise than by its path, or sitting
    in another partition than the path's, is re-sent to its home partition first (with a
    request id fixed from its first position when it had none, so a redelivery of the
    original record is still applied once).
    """

    def __init__(
        self,
        names: TopicNames,
        partitions: int,
        table: MutableMapping[bytes, bytes],
        cache_size: int = 1024,
    ) -> None:
        self.names = names
        self.partitions = partitions
        self.table = table
        self._cache: OrderedDict[str, DocState] = OrderedDict()
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
        """Version `number` of a document (None: the latest), or None when unknown."""
        if number is None:
            head = self.head(path)
            if head is None or not head["version"]:
                return None
            number = int(head["version"])
        raw = self.table.get(version_key(path, number))
        return None if raw is None else Version.from_obj(loads(raw))

    def state(self, path: str) -> DocState:
        """The whole state of a document (cached; read from the table on first use)."""
        state = self._cache.get(path)
        if state is not None:
            self._cache.move_to_end(path)
            return state
        head = self.head(path)
        if head is None:
            state = DocState(path)
        else:
            versions = []
            for n in range(1, int(head["version"]) + 1):
                found = self.version(path, n)
                if found is None:
                    raise LookupError(f"document {path!r}: version {n} missing from the table")
                versions.append(found)
            conflicts = tuple((str(rid), dict(r)) for rid, r in head.get("conflicts", ()))
            state = DocState(path, tuple(versions), conflicts)
        self._remember(state)
        return state

    # ------------------------------------------------------------------ writes

    def handle(self, partition: int, offset: int, key: bytes | None, value: bytes) -> DocsHandled:
        """Process one record of the publish topic."""
        out = DocsHandled()
        origin = (self.names.publish, partition, offset)
        try:
            if len(value) > MAX_REQUEST_BYTES:
                raise RequestError(
                    f"message of {len(value)} bytes exceeds the {MAX_REQUEST_BYTES}-byte limit"
                )
            try:
                data = orjson.loads(value)
            except orjson.JSONDecodeError as exc:
                raise RequestError(f"not JSON: {exc}") from None
            request = validate(data)
            request_id = request.request_id or f"{self.names.publish}:{partition}:{offset}"
            wanted = request.path.encode()
            home = misplaced(wanted, key, partition, self.partitions)
            if home is not None:
                out.events.append("doc_rerouted")
                fixed = value if request.request_id else dumps({**data, "request_id": request_id})
                out.sends.append(Outgoing(self.names.publish, wanted, fixed, home))
                return out
            before = self.state(request.path)
            after, response = apply(before, request, request_id)
        except RequestError as exc:
            out.events.append("doc_dead_letter")
            out.sends.append(dead_letter(self.names, origin, key, value, str(exc)))
            return out
        if after is before:
            out.events.append("doc_duplicate")
        else:
            out.events.append("doc_" + ("conflict" if response["status"] == "conflict" else "ok"))
            self._store(before, after, partition)
        out.response = response
        out.sends.append(Outgoing(self.names.publish_results, wanted, dumps(response), partition))
        return out

    def _store(self, before: DocState, after: DocState, partition: int) -> None:
        """Write the new versions, then the head (so a head never names a missing version)."""
        for version in after.versions[len(before.versions) :]:
            self.table[version_key(after.path, version.number)] = dumps(version.to_obj())
        current = after.current
        self.table[head_key(after.path)] = dumps(
            {
                "partition": partition,
                "version": after.version,
                "content_hash": current.content_hash if current is not None else None,
                "conflicts": [list(pair) for pair in after.conflicts],
            }
        )
        self._remember(after)

    def _remember(self, state: DocState) -> None:
        self._cache[state.path] = state
        self._cache.move_to_end(state.path)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
