"""The document tools' answers: store results and pages as MCP answers (pure).

Each function returns ``(structured, is_error, text)``: the tool's `structuredContent`,
whether the call is an error result, and the text block the model reads. The store's own
names are mapped to the merge plan's where they differ: a conflict's expected version is
`your_version` and the store's current version `current_version`; a plain success says
``merged: false``. `content_hash` is the store's sha256 hex of the body, as on the pages and
the `publish.results` topic (docs/gateway-documents.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

Answer = tuple[dict[str, Any], bool, str]
OnConflict = Literal["fail", "merge"]

#: Characters of the content hash shown in a text block (the structured answer has all 64).
SHORT_HASH: Final = 12


def fetch_answer(page: Mapping[str, Any] | None, path: str, version: int | None) -> Answer:
    """A document page (`GET /docs/...`), or its absence (404, or a dropped version: 410)."""
    if page is None:
        missing: dict[str, Any] = {"status": "not_found", "path": path}
        if version is None:
            return missing, True, f"no document {path}"
        missing["version"] = version
        return missing, True, f"{path} has no version {version} (never made, or dropped)"
    number, body, digest = int(page["version"]), str(page["body"]), page["content_hash"]
    found = {"status": "ok", "path": path, "version": number, "body": body, "content_hash": digest}
    return found, False, f"{path} v{number} (sha256 {_short(digest)})\n{body}"


def publish_answer(result: Mapping[str, Any], on_conflict: OnConflict) -> Answer:
    """What `DocsClient.publish` returned (the store's result, or `merge_and_publish`'s)."""
    status = result.get("status")
    if status == "ok":
        return _published(result)
    if status == "conflict":
        return _conflict(result, on_conflict)
    return _refused(result)


def append_answer(result: Mapping[str, Any]) -> Answer:
    """What `DocsClient.append` returned: an append always applies unless it is refused."""
    if result.get("status") != "ok":
        return _refused(result)
    path, version = str(result["path"]), int(result["version"])
    appended = {
        "status": "ok",
        "path": path,
        "version": version,
        "content_hash": result["content_hash"],
    }
    return appended, False, f"appended to {path}: v{version}"


def unavailable_answer(reason: str) -> Answer:
    """The store could not be reached or did not answer in time."""
    return (
        {"status": "error", "reason": reason},
        True,
        f"the document store is unavailable: {reason}",
    )


def _published(result: Mapping[str, Any]) -> Answer:
    path, version = str(result["path"]), int(result["version"])
    answer: dict[str, Any] = {"status": "ok", "path": path, "version": version}
    if not result.get("merged"):
        answer |= {"merged": False, "content_hash": result["content_hash"]}
        return answer, False, f"published {path} v{version}"
    base, theirs, retries = (
        int(result["base_version"]),
        int(result["their_version"]),
        int(result["retries"]),
    )
    answer |= {
        "merged": True,
        "base_version": base,
        "their_version": theirs,
        "retries": retries,
        "content_hash": result["content_hash"],
    }
    text = f"published {path} v{version}: your edit of v{base} merged with v{theirs}"
    if retries:
        tries = _plural(retries, "retry", "retries")
        text += f" (after {retries} {tries}: other writers came first)"
    return answer, False, text


def _conflict(result: Mapping[str, Any], on_conflict: OnConflict) -> Answer:
    path = str(result["path"])
    ours, current = int(result["expected_version"]), int(result["version"])
    answer: dict[str, Any] = {
        "status": "conflict",
        "path": path,
        "your_version": ours,
        "current_version": current,
    }
    reason = result.get("reason")
    if reason == "base_missing":
        answer |= {"mergeable": False, "reason": "base_missing"}
        text = (
            f"conflict: {path} is at v{current}, and v{ours} is no longer kept, so your edit "
            f"cannot be merged; nothing was published. Fetch the latest and publish again"
        )
        return answer, True, text
    if reason == "contention":
        retries = int(result["retries"])
        answer |= {
            "mergeable": False,
            "reason": "contention",
            "retries": retries,
            "content_hash": result.get("content_hash"),
        }
        text = (
            f"conflict: {retries} merge {_plural(retries, 'retry', 'retries')} lost to other "
            f"writers (contention); nothing was published. Fetch v{current} and try again"
        )
        return answer, True, text
    if result.get("mergeable") is False:
        conflicts = int(result["conflicts"])
        answer |= {
            "mergeable": False,
            "conflicts": conflicts,
            "body": str(result["body"]),
            "content_hash": result.get("content_hash"),
        }
        text = (
            f"conflict: your edit of v{ours} overlaps v{current} in {conflicts} "
            f"{_plural(conflicts, 'place', 'places')}; nothing was published. Resolve the "
            f"markers below and publish the result with expected_version {current}:\n"
            f"{answer['body']}"
        )
        return answer, True, text
    answer["content_hash"] = result.get("content_hash")
    text = (
        f"conflict: {path} is at v{current}, your edit is of v{ours}; nothing was published. "
        f"Fetch v{current} and publish again"
    )
    if on_conflict == "fail":
        text += ", or call with on_conflict: merge"
    return answer, True, text


def _refused(result: Mapping[str, Any]) -> Answer:
    """`rejected` (a body over the size limit, an invalid request) or the worker's `error`."""
    reason = str(result.get("reason") or "no reason given")
    if result.get("status") == "rejected":
        rejected = {
            "status": "rejected",
            "path": result.get("path"),
            "version": result.get("version"),
            "reason": reason,
        }
        return rejected, True, reason
    failed = {"status": "error", "path": result.get("path"), "reason": reason}
    return failed, True, f"the document store failed on this request: {reason}"


def _short(digest: object) -> str:
    text = str(digest)
    return text[:SHORT_HASH] + "…" if len(text) > SHORT_HASH else text


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many
