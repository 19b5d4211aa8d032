"""Versioned document store: a pure compare-and-set over immutable versions.

The contract: docs/conflict-kinds.md#versioned-documents.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

#: How many answers a document remembers by request id, so a redelivered request (the
#: same id) is answered again as it was, not applied twice. At-least-once redelivery repeats
#: recent records only; a bounded index keeps a document's head record small.
REMEMBERED_ANSWERS: Final = 128
#: Longest accepted document path (characters) and request id.
MAX_PATH: Final = 512
MAX_REQUEST_ID: Final = 128
#: Largest body a version may have by default (bytes of its stored JSON form), so a
#: version fits one Kafka record whatever its characters (a control character takes 6).
MAX_BODY_BYTES: Final = 256 * 1024
#: Versions a document keeps by default; the oldest beyond are dropped.
MAX_VERSIONS: Final = 100
OPS: Final = ("publish", "append")
#: A path may not end like the versioned page's suffix (`.../v/<n>`), so URLs stay unambiguous.
_VERSION_SUFFIX: Final = re.compile(r"(^|/)v/[0-9]+$")
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
#: Characters that would change a URL's meaning when a page is forwarded to the owner.
_URL_SPECIAL: Final = re.compile(r"[?#%]")

Op = Literal["publish", "append"]


class RequestError(ValueError):
    """A request the store refuses (dead-lettered); the message is the reason."""


@dataclass(frozen=True, slots=True)
class Version:
    """One immutable version of a document."""

    number: int
    body: str
    content_hash: str
    request_id: str

    def to_obj(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "version": self.number,
            "body": self.body,
            "content_hash": self.content_hash,
            "request_id": self.request_id,
        }

    @staticmethod
    def from_obj(obj: dict[str, Any]) -> Version:
        """The inverse of `to_obj`."""
        return Version(
            int(obj["version"]), str(obj["body"]), str(obj["content_hash"]), str(obj["request_id"])
        )


@dataclass(frozen=True, slots=True)
class DocLimits:
    """The bounds of one document: versions kept and the size of a body."""

    max_versions: int = MAX_VERSIONS
    max_body_bytes: int = MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if self.max_versions < 1 or self.max_body_bytes < 1:
            raise ValueError("document limits must be at least 1")


@dataclass(frozen=True, slots=True)
class DocState:
    """The latest versions of one document (oldest first) and its recent answers by request id.

    `versions` is a suffix of the history: the store keeps at most `max_versions`; a caller
    may hold fewer (only the current one, which is all `apply` needs). `answers` maps recent
    request ids to the answer given (oldest first, at most REMEMBERED_ANSWERS).
    """

    path: str
    versions: tuple[Version, ...] = ()
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def version(self) -> int:
        """The current version number (0: the document does not exist yet)."""
        return self.versions[-1].number if self.versions else 0

    @property
    def current(self) -> Version | None:
        """The latest version, if any."""
        return self.versions[-1] if self.versions else None

    def at(self, number: int) -> Version | None:
        """Version `number`, or None when it does not exist or is not held."""
        if not self.versions:
            return None
        i = number - self.versions[0].number
        return self.versions[i] if 0 <= i < len(self.versions) else None


@dataclass(frozen=True, slots=True)
class Request:
    """A validated publish or append request."""

    path: str
    body: str
    op: Op
    expected_version: int | None
    request_id: str | None


def content_hash(body: str) -> str:
    """The sha256 hex digest of a body's UTF-8 bytes."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def check_path(path: object) -> str:
    """The path when acceptable; RequestError naming the problem otherwise."""
    if not isinstance(path, str) or not path:
        raise RequestError("path: missing or not a non-empty string")
    if len(path) > MAX_PATH:
        raise RequestError(f"path: longer than {MAX_PATH} characters")
    if _CONTROL.search(path):
        raise RequestError("path: contains control characters")
    if _URL_SPECIAL.search(path):
        raise RequestError("path: contains '?', '#' or '%'")
    if path.startswith("/") or path.endswith("/") or "//" in path:
        raise RequestError("path: leading, trailing or doubled '/'")
    if _VERSION_SUFFIX.search(path):
        raise RequestError("path: may not end in 'v/<number>' (reserved for versioned reads)")
    return path


def validate(data: object) -> Request:
    """A request from decoded JSON; RequestError naming the key and the reason otherwise."""
    if not isinstance(data, Mapping):
        raise RequestError("request: not a JSON object")
    path = check_path(data.get("path"))
    body = data.get("body")
    if not isinstance(body, str):
        raise RequestError("body: missing or not a string")
    op = data.get("op", "publish")
    if op not in OPS:
        raise RequestError(f"op: {op!r} is not one of publish, append")
    expected = data.get("expected_version")
    if op == "publish" and (
        isinstance(expected, bool) or not isinstance(expected, int) or expected < 0
    ):
        raise RequestError("expected_version: missing or not an integer >= 0")
    if op == "append" and expected is not None and not isinstance(expected, int):
        raise RequestError("expected_version: not an integer")
    rid = data.get("request_id")
    if rid is not None and (not isinstance(rid, str) or not rid or len(rid) > MAX_REQUEST_ID):
        raise RequestError(f"request_id: not a string of 1..{MAX_REQUEST_ID} characters")
    return Request(path, body, "append" if op == "append" else "publish", expected, rid)


def stored_size(body: str) -> int:
    """The bytes a body takes in its stored JSON form (escapes included), UTF-8."""
    return len(json.dumps(body, ensure_ascii=False).encode())


def _ok(state: DocState, version: Version) -> dict[str, Any]:
    return {
        "status": "ok",
        "path": state.path,
        "version": version.number,
        "content_hash": version.content_hash,
        "request_id": version.request_id,
    }


def _remember(
    state: DocState, request_id: str, response: dict[str, Any], versions: tuple[Version, ...]
) -> DocState:
    """The state with `versions` and `response` remembered for `request_id` (bounded)."""
    answers = dict(state.answers)
    answers.pop(request_id, None)
    answers[request_id] = response
    while len(answers) > REMEMBERED_ANSWERS:
        del answers[next(iter(answers))]
    return DocState(state.path, versions, answers)


def apply(
    state: DocState,
    request: Request | Mapping[str, Any],
    request_id: str,
    limits: DocLimits | None = None,
) -> tuple[DocState, dict[str, Any]]:
    """Apply one request: (new state, response). A repeated request id changes nothing.

    A mapping is validated first (RequestError when it is not a valid request). A new
    version whose body would take more than `max_body_bytes` stored is not made: the answer
    is `rejected` with the limit in `reason`. Beyond `max_versions` the oldest versions are
    dropped from the state.
    """
    limits = limits if limits is not None else DocLimits()
    if not isinstance(request, Request):
        request = validate(request)
    if request.path != state.path:
        raise ValueError(f"request for {request.path!r} applied to {state.path!r}")
    earlier = state.answers.get(request_id)
    if earlier is not None:
        return state, dict(earlier)
    current = state.current
    if request.op == "append":
        body = (current.body if current is not None else "") + request.body
    elif request.expected_version == state.version:
        body = request.body
    else:
        response = {
            "status": "conflict",
            "path": state.path,
            "version": state.version,
            "content_hash": current.content_hash if current is not None else None,
            "expected_version": request.expected_version,
            "request_id": request_id,
        }
        return _remember(state, request_id, response, state.versions), response
    size = stored_size(body)
    if size > limits.max_body_bytes:
        response = {
            "status": "rejected",
            "path": state.path,
            "version": state.version,
            "content_hash": current.content_hash if current is not None else None,
            "request_id": request_id,
            "reason": f"body: the version would take {size} bytes stored, over the limit of "
            f"{limits.max_body_bytes} (CLAIMWATCH_DOC_MAX_BODY_BYTES)",
        }
        return _remember(state, request_id, response, state.versions), response
    version = Version(state.version + 1, body, content_hash(body), request_id)
    kept = (*state.versions, version)[-limits.max_versions :]
    response = _ok(state, version)
    return _remember(state, request_id, response, kept), response
