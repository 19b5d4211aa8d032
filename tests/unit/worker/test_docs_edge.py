"""The documents edge: requests in, results keyed by path out, versions kept in a bytes table."""

from __future__ import annotations

from typing import Any

import orjson
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.docs.edge import DocsEdge, head_key, version_key

NAMES = TopicNames("t.")
PARTITIONS = 4
PATH = "notes/plan.md"
HOME = partition_for(PATH.encode(), PARTITIONS)


def _value(body: str, expected: int | None, op: str = "publish", rid: str | None = None) -> bytes:
    data: dict[str, Any] = {"path": PATH, "body": body, "expected_version": expected, "op": op}
    if rid is not None:
        data["request_id"] = rid
    return orjson.dumps(data)


def test_publish_answers_on_the_results_topic_keyed_by_path() -> None:
    """A publish makes version 1; the result goes to publish.results in the path's partition."""
    table: dict[bytes, bytes] = {}
    out = DocsEdge(NAMES, PARTITIONS, table).handle(
        HOME, 7, PATH.encode(), _value("a\n", 0, rid="r1")
    )
    assert [(NAMES.publish_results, PATH.encode(), HOME)] == [
        (o.topic, o.key, o.partition) for o in out.sends
    ]
    result = orjson.loads(out.sends[0].value)
    assert ("ok", 1, "r1") == (result["status"], result["version"], result["request_id"])
    assert {head_key(PATH), version_key(PATH, 1)} == set(table)


def test_state_survives_a_restart_and_old_versions_stay_readable() -> None:
    """A new edge over the same table continues the history; every version is readable."""
    table: dict[bytes, bytes] = {}
    DocsEdge(NAMES, PARTITIONS, table).handle(HOME, 0, PATH.encode(), _value("one", 0))
    again = DocsEdge(NAMES, PARTITIONS, table)
    out = again.handle(HOME, 1, PATH.encode(), _value("two", 1))
    assert "ok" == orjson.loads(out.sends[0].value)["status"]
    stale = again.handle(HOME, 2, PATH.encode(), _value("three", 1))
    assert ("conflict", 2) == (
        orjson.loads(stale.sends[0].value)["status"],
        orjson.loads(stale.sends[0].value)["version"],
    )
    first, latest = again.version(PATH, 1), again.version(PATH)
    assert first is not None and latest is not None
    assert ("one", "two", 2) == (first.body, latest.body, latest.number)
    assert None is again.version(PATH, 3)
    assert None is again.version("missing")


def test_redelivered_append_without_request_id_is_applied_once() -> None:
    """The same record (same offset) delivered twice appends once; the same answer is repeated."""
    edge = DocsEdge(NAMES, PARTITIONS, {})
    edge.handle(HOME, 0, PATH.encode(), _value("a", 0))
    first = edge.handle(HOME, 1, PATH.encode(), _value("b", None, op="append"))
    second = edge.handle(HOME, 1, PATH.encode(), _value("b", None, op="append"))
    assert first.sends[0].value == second.sends[0].value
    assert ["doc_ok"] == first.events and ["doc_duplicate"] == second.events
    latest = edge.version(PATH)
    assert latest is not None and "ab" == latest.body


def test_misrouted_request_is_resent_home_with_a_fixed_request_id() -> None:
    """A request keyed otherwise is re-sent keyed by its path, to the path's partition."""
    other = (HOME + 1) % PARTITIONS
    out = DocsEdge(NAMES, PARTITIONS, {}).handle(other, 5, b"whatever", _value("x", 0))
    assert [(NAMES.publish, PATH.encode(), HOME)] == [
        (o.topic, o.key, o.partition) for o in out.sends
    ]
    assert f"t.publish:{other}:5" == orjson.loads(out.sends[0].value)["request_id"]
    assert ["doc_rerouted"] == out.events


def test_malformed_requests_go_to_the_dlq_with_bytes_and_reason() -> None:
    """Not JSON, a missing path or a bad op: the DLQ gets the original bytes and the reason.

    A request whose path is valid is answered `rejected` with the same reason as well.
    """
    edge = DocsEdge(NAMES, PARTITIONS, {})
    cases = [
        (b"{nope", "not JSON"),
        (orjson.dumps({"body": "x", "expected_version": 0}), "path: missing"),
        (orjson.dumps({"path": PATH, "body": "x", "op": "put", "request_id": "q"}), "op: 'put'"),
        (b"x" * (300 * 1024), "exceeds"),
    ]
    for offset, (raw, reason) in enumerate(cases):
        out = edge.handle(HOME, offset, b"k", raw)
        dead, *answers = out.sends
        if "put" in reason:
            (answer,) = answers
            result = orjson.loads(answer.value)
            assert (NAMES.publish_results, PATH.encode(), HOME) == (
                answer.topic,
                answer.key,
                answer.partition,
            )
            assert ("rejected", "q", reason) == (
                result["status"],
                result["request_id"],
                result["reason"][: len(reason)],
            )
        else:
            assert [] == answers
        headers = dict(dead.headers)
        assert (NAMES.dlq, raw) == (dead.topic, dead.value)
        assert reason in headers["claimwatch.reason"].decode()
        assert (b"t.publish", str(offset).encode()) == (
            headers["claimwatch.topic"],
            headers["claimwatch.offset"],
        )
    assert None is edge.version(PATH)
