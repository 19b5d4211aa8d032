"""The documents edge at its bounds: versions kept, body size, reads, failures confined."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import claimwatch.worker.docs.edge as edge_module
import orjson
import pytest
from claimwatch.core.docstore import DocLimits, DocState, Request
from claimwatch.models.publish import PublishResult
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.docs.edge import DocsEdge, Gone, head_key, version_key

NAMES = TopicNames("t.")
PARTITIONS = 4
PATH = "notes/plan.md"
HOME = partition_for(PATH.encode(), PARTITIONS)
MB = 1_000_000


class CountingTable(dict[bytes, bytes]):
    """A dict table that counts its reads."""

    reads = 0

    def get(self, key: bytes, default: Any = None) -> Any:
        self.reads += 1
        return super().get(key, default)


def _value(body: str, expected: int | None, op: str = "publish", path: str = PATH) -> bytes:
    return orjson.dumps({"path": path, "body": body, "expected_version": expected, "op": op})


def _result(out: Any) -> dict[str, Any]:
    (send,) = [o for o in out.sends if o.topic == NAMES.publish_results]
    result: dict[str, Any] = orjson.loads(send.value)
    PublishResult.model_validate(result)
    return result


def _publish(edge: DocsEdge, bodies: Iterator[str] | list[str], path: str = PATH) -> list[Any]:
    home = partition_for(path.encode(), PARTITIONS)
    return [
        _result(edge.handle(home, n, path.encode(), _value(body, n, path=path)))
        for n, body in enumerate(bodies)
    ]


def test_versions_beyond_the_bound_are_deleted_and_answer_gone() -> None:
    """With max_versions 3, after five publishes the table holds versions 3..5 only."""
    table: dict[bytes, bytes] = {}
    edge = DocsEdge(NAMES, PARTITIONS, table, max_versions=3)
    assert ["ok"] * 5 == [r["status"] for r in _publish(edge, [f"v{n}" for n in range(1, 6)])]
    assert {head_key(PATH)} | {version_key(PATH, n) for n in (3, 4, 5)} == set(table)
    gone = edge.lookup(PATH, 2)
    assert isinstance(gone, Gone) and "keeps its latest 3 versions (3..5 now" in gone.reason
    kept = edge.lookup(PATH, 3)
    assert not isinstance(kept, Gone) and kept is not None and "v3" == kept.body
    assert None is edge.lookup(PATH, 6)


def test_a_cache_miss_reads_the_head_and_the_current_version_only() -> None:
    """Loading a document of 60 versions after a restart reads two values, not 61."""
    table = CountingTable()
    _publish(DocsEdge(NAMES, PARTITIONS, table), [f"v{n}" for n in range(60)])
    table.reads = 0
    again = DocsEdge(NAMES, PARTITIONS, table)
    result = _result(again.handle(HOME, 99, PATH.encode(), _value("next", 60)))
    assert ("ok", 61, 2) == (result["status"], result["version"], table.reads)


def test_appends_past_the_body_bound_are_rejected_and_every_value_stays_small() -> None:
    """Control characters take 6 bytes stored: the bound is on that size, answered rejected.

    Before, the bound counted UTF-8 bytes: six appends of 40,000 control characters stored a
    version of 1.44 MB, past the producer's limit (the process would exit).
    """
    table: dict[bytes, bytes] = {}
    edge = DocsEdge(NAMES, PARTITIONS, table)
    edge.handle(HOME, 0, PATH.encode(), _value("", 0))
    statuses = []
    for n in range(1, 9):
        result = _result(
            edge.handle(HOME, n, PATH.encode(), _value("\x01" * 40_000, None, "append"))
        )
        statuses.append(result["status"])
    assert ["ok"] + ["rejected"] * 7 == statuses
    assert "over the limit of 262144 (CLAIMWATCH_DOC_MAX_BODY_BYTES)" in str(result["reason"])
    assert max(len(v) for v in table.values()) < 300 * 1024 < MB


def test_a_poison_document_is_answered_error_and_other_documents_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Applying a request to one document raises: its sender gets `error`, others `ok`."""
    real = edge_module.apply

    def poisoned(
        state: DocState, request: Request, rid: str, limits: DocLimits | None = None
    ) -> Any:
        if request.path == "poison":
            raise MemoryError("too much")
        return real(state, request, rid, limits)

    monkeypatch.setattr(edge_module, "apply", poisoned)
    edge = DocsEdge(NAMES, PARTITIONS, {})
    poison_out = edge.handle(
        partition_for(b"poison", PARTITIONS), 0, b"poison", _value("x", 0, path="poison")
    )
    bad = _result(poison_out)
    assert ("error", "internal_error: MemoryError: too much") == (bad["status"], bad["reason"])
    assert (1, ["doc_quarantined"]) == (poison_out.quarantined, poison_out.events)
    assert ["ok", "ok"] == [r["status"] for r in _publish(edge, ["a", "b"])]


def test_an_unreadable_document_is_answered_error_then_starts_afresh() -> None:
    """A forged head fails its load: answered `error`, dropped; the next request applies."""
    table = {head_key(PATH): b'{"version": "many"}'}
    edge = DocsEdge(NAMES, PARTITIONS, table)
    first = _result(edge.handle(HOME, 0, PATH.encode(), _value("a", 0)))
    assert ("error", "internal_error: Unreadable") == (
        first["status"],
        ":".join(str(first["reason"]).split(":")[:2]),
    )
    assert "ok" == _result(edge.handle(HOME, 1, PATH.encode(), _value("a", 0)))["status"]


def test_a_redelivered_request_is_answered_from_the_bounded_index() -> None:
    """The same request id is answered as before after a restart, and not applied again."""
    table: dict[bytes, bytes] = {}
    raw = orjson.dumps({"path": PATH, "body": "x", "op": "append", "request_id": "r-1"})
    first = _result(DocsEdge(NAMES, PARTITIONS, table).handle(HOME, 0, PATH.encode(), raw))
    again = DocsEdge(NAMES, PARTITIONS, table).handle(HOME, 0, PATH.encode(), raw)
    assert (first, ["doc_duplicate"]) == (_result(again), again.events)


def test_a_publish_past_the_request_limit_is_answered_rejected() -> None:
    """A body over the limit makes the record too large: dead-lettered, and answered too."""
    edge = DocsEdge(NAMES, PARTITIONS, {})
    raw = orjson.dumps(
        {"path": PATH, "body": "x" * 300_000, "expected_version": 0, "request_id": "big"}
    )
    out = edge.handle(HOME, 0, PATH.encode(), raw)
    assert [NAMES.dlq, NAMES.publish_results] == [o.topic for o in out.sends]
    result = _result(out)
    assert ("rejected", "big") == (result["status"], result["request_id"])
    assert "exceeds the 266240-byte limit (CLAIMWATCH_DOC_MAX_BODY_BYTES plus 4096)" in str(
        result["reason"]
    )
