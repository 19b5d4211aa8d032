"""Plan blocking edge: the two-stage join over partitions owned by two simulated workers."""

from __future__ import annotations

from collections import deque
from typing import Any

import orjson
from claimwatch.wire.topics import TopicNames, partition_for
from claimwatch.worker.outgoing import Outgoing
from claimwatch.worker.plans.edge import PLAN_PREFIX, PlansEdge, PlansHandled

from tests.support.plans import decision

NAMES = TopicNames("t.")
PARTITIONS = 4


class Cluster:
    """Two workers, each owning two partitions with its own tables; records routed between them.

    Like Faust's assignor, partition p of every topic belongs to one worker, and a worker's
    tables hold only what it wrote. Records are delivered in send order (FIFO).
    """

    def __init__(self) -> None:
        """Partitions 0 and 2 on worker 0, 1 and 3 on worker 1; empty tables, empty queue."""
        self.owner = {0: 0, 1: 1, 2: 0, 3: 1}
        self.tables = [({}, {}, {}) for _ in range(2)]
        self.edges = [
            PlansEdge(NAMES, PARTITIONS, plans, facts, resolutions)
            for plans, facts, resolutions in self.tables
        ]
        self.queue: deque[Outgoing] = deque()
        self.out: list[Outgoing] = []
        self.offsets: dict[tuple[str, int], int] = {}

    def resolutions(self, fact: str) -> dict[bytes, bytes]:
        """The resolutions table of the worker owning the fact."""
        worker = self.owner[partition_for(fact.encode(), PARTITIONS)]
        return self.tables[worker][2]

    def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None) -> None:
        """Produce a record (partition by key when not given)."""
        if partition is None:
            partition = partition_for(key or b"", PARTITIONS)
        self.queue.append(Outgoing(topic, key, value, partition))

    def decide(self, fact: str, record: dict[str, Any]) -> None:
        """What the claims agent does: store the resolution, append to `decisions`."""
        body = orjson.dumps(record)
        self.resolutions(fact)[fact.encode()] = body
        self.send(NAMES.decisions, fact.encode(), body, None)

    def run(self) -> None:
        """Deliver records until no stage has anything more to say."""
        while self.queue:
            rec = self.queue.popleft()
            assert rec.partition is not None
            offset = self.offsets.get((rec.topic, rec.partition), 0)
            self.offsets[(rec.topic, rec.partition)] = offset + 1
            edge = self.edges[self.owner[rec.partition]]
            args = (rec.topic, rec.partition, offset, rec.key, rec.value)
            handled: PlansHandled
            if rec.topic in (NAMES.plans, NAMES.plans_updates):
                handled = edge.handle_plan_side(*args)
            elif rec.topic == NAMES.decisions:  # handed over in process, as the claims agent does
                assert rec.key is not None
                handled = edge.on_decided(rec.key, orjson.loads(rec.value))
            elif rec.topic == NAMES.plans_interest:
                handled = edge.handle_fact_side(*args)
            else:
                continue
            for out in handled.sends:
                if out.topic in (NAMES.plans_steps, NAMES.dlq):
                    self.out.append(out)
                else:
                    self.queue.append(out)

    def statuses(self, step: str | None = None) -> list[dict[str, Any]]:
        """Every step status emitted so far (of one step when given), in order."""
        found = [orjson.loads(o.value) for o in self.out if o.topic == NAMES.plans_steps]
        return [s for s in found if step is None or s["step_id"] == step]


def facts_on_both_workers() -> tuple[str, str, str]:
    """Three facts: two owned by different workers than the plan, one more for the third step."""
    owner = {0: 0, 1: 1, 2: 0, 3: 1}
    plan_worker = owner[partition_for(b"plan-1", PARTITIONS)]
    other = [f"inv-{i}|payment_status" for i in range(50)]
    remote = [f for f in other if owner[partition_for(f.encode(), PARTITIONS)] != plan_worker]
    local = [f for f in other if owner[partition_for(f.encode(), PARTITIONS)] == plan_worker]
    return remote[0], local[0], remote[1]


def plan_body(pay: str, other: str, missing: str) -> bytes:
    """A plan: an irreversible refund, an unrelated step, a step reading an undecided fact."""
    return orjson.dumps(
        {
            "plan_id": "plan-1",
            "steps": [
                {"step_id": "refund", "reads": [pay], "irreversible": True},
                {"step_id": "notify", "reads": [other], "irreversible": False},
                {"step_id": "audit", "reads": [missing, pay]},
            ],
        }
    )


def test_statuses_follow_decisions_across_workers_and_only_readers_re_emit() -> None:
    """Conflict blocks the refund, resolution frees it; the unrelated step is emitted once."""
    pay, other, missing = facts_on_both_workers()
    cluster = Cluster()
    cluster.decide(other, decision(other, "dec_o", "resolved", "proceed", "2026-09-14T09:00:00Z"))
    cluster.decide(pay, decision(pay, "dec_1", "resolved", "proceed", "2026-09-14T09:00:00Z"))
    cluster.run()
    assert [] == cluster.statuses()  # no plan reads them yet: nothing stored on the fact side
    cluster.send(NAMES.plans, b"plan-1", plan_body(pay, other, missing), None)
    cluster.run()
    first = {s["step_id"]: (s["status"], s["waiting"]) for s in cluster.statuses()}
    assert {
        "refund": ("runnable", []),
        "notify": ("runnable", []),
        "audit": ("waiting", [missing]),
    } == first
    cluster.decide(pay, decision(pay, "dec_2", "conflict", "escalate", "2026-09-14T09:01:00Z"))
    cluster.run()
    refund = cluster.statuses("refund")
    assert ("blocked", ["dec_2"]) == (refund[-1]["status"], refund[-1]["blocking"])
    assert ("blocked", ["dec_2"]) == (
        cluster.statuses("audit")[-1]["status"],
        cluster.statuses("audit")[-1]["blocking"],
    )
    cluster.decide(pay, decision(pay, "dec_3", "resolved", "proceed", "2026-09-14T09:02:00Z"))
    cluster.run()
    assert ["runnable", "blocked", "runnable"] == [s["status"] for s in cluster.statuses("refund")]
    assert ["waiting", "blocked", "waiting"] == [s["status"] for s in cluster.statuses("audit")]
    assert 1 == len(cluster.statuses("notify"))


def test_a_redelivered_older_decision_does_not_move_a_step_back() -> None:
    """At-least-once: the conflict read again after the resolution changes nothing."""
    pay, other, missing = facts_on_both_workers()
    cluster = Cluster()
    cluster.send(NAMES.plans, b"plan-1", plan_body(pay, other, missing), None)
    cluster.run()
    conflict = decision(pay, "dec_2", "conflict", "escalate", "2026-09-14T09:01:00Z")
    cluster.decide(pay, conflict)
    cluster.decide(pay, decision(pay, "dec_3", "resolved", "proceed", "2026-09-14T09:02:00Z"))
    cluster.run()
    before = len(cluster.statuses())
    cluster.send(NAMES.decisions, pay.encode(), orjson.dumps(conflict), None)
    cluster.run()
    assert before == len(cluster.statuses())
    assert "runnable" == cluster.statuses("refund")[-1]["status"]


def test_a_restarted_plan_side_rebuilds_from_its_table() -> None:
    """Forgetting the in-memory books (rebalance) loses nothing: the tables hold it all."""
    pay, other, missing = facts_on_both_workers()
    cluster = Cluster()
    cluster.send(NAMES.plans, b"plan-1", plan_body(pay, other, missing), None)
    cluster.run()
    for edge in cluster.edges:
        edge.forget()
    cluster.decide(pay, decision(pay, "dec_2", "conflict", "escalate", "2026-09-14T09:01:00Z"))
    cluster.run()
    assert ["waiting", "blocked"] == [s["status"] for s in cluster.statuses("refund")]
    assert 1 == len(cluster.statuses("notify"))


def test_a_fact_side_table_restored_behind_the_edge_is_read_after_forget() -> None:
    """Recovery rewrites the fact-side table; after its forget the edge sees who reads what."""
    pay, other, missing = facts_on_both_workers()
    cluster = Cluster()
    cluster.send(NAMES.plans, b"plan-1", plan_body(pay, other, missing), None)
    cluster.run()
    worker = cluster.owner[partition_for(pay.encode(), PARTITIONS)]
    assert worker == cluster.owner[partition_for(missing.encode(), PARTITIONS)]
    facts = cluster.tables[worker][1]
    saved = dict(facts)
    facts.clear()  # the edge lists the facts read while its table is empty (mid-recovery)
    cluster.decide(
        missing, decision(missing, "dec_9", "resolved", "proceed", "2026-09-14T09:00:30Z")
    )
    cluster.run()
    facts.update(saved)  # the changelog restored it
    cluster.edges[worker].forget()  # what the table's on_recover does
    cluster.decide(pay, decision(pay, "dec_2", "conflict", "escalate", "2026-09-14T09:01:00Z"))
    cluster.run()
    assert ["waiting", "blocked"] == [s["status"] for s in cluster.statuses("refund")]


def test_malformed_plans_go_to_the_dead_letter_topic_with_bytes_and_reason() -> None:
    """Not JSON, a missing field, a bad fact key, a repeated step id: DLQ, nothing stored."""
    cluster = Cluster()
    bad = [
        b"{not json",
        b'{"plan_id": "p", "steps": []}',
        b'{"plan_id": "p", "steps": [{"step_id": "a", "reads": ["no-bar"]}]}',
        b'{"plan_id": "p", "steps": [{"step_id": "a"}, {"step_id": "a"}]}',
    ]
    for body in bad:
        cluster.send(NAMES.plans, b"p", body, None)
    cluster.run()
    dlq = [o for o in cluster.out if o.topic == NAMES.dlq]
    assert bad == [o.value for o in dlq]
    reasons = [dict(o.headers)["claimwatch.reason"].decode() for o in dlq]
    assert all(r.startswith("not a plan:") for r in reasons), reasons
    assert "no-bar" in reasons[2] and "used twice" in reasons[3]
    assert all(dict(o.headers)["claimwatch.topic"] == NAMES.plans.encode() for o in dlq)
    assert [] == [k for t in cluster.tables for k in t[0]]


def test_a_plan_keyed_otherwise_is_rerouted_and_a_tombstone_drops_interest() -> None:
    """A plan sent with another key reaches its home; an empty value deletes it everywhere."""
    pay, other, missing = facts_on_both_workers()
    cluster = Cluster()
    cluster.send(NAMES.plans, b"wrong-key", plan_body(pay, other, missing), 0)
    cluster.run()
    assert 3 == len(cluster.statuses())
    stored = [k for t in cluster.tables for k in t[0]]
    assert [PLAN_PREFIX + b"plan-1"] == stored
    cluster.send(NAMES.plans, b"plan-1", b"", None)
    cluster.run()
    assert [] == [k for t in cluster.tables for k in (*t[0], *t[1])]
    cluster.decide(pay, decision(pay, "dec_9", "conflict", "escalate", "2026-09-14T09:05:00Z"))
    cluster.run()
    assert 3 == len(cluster.statuses())
