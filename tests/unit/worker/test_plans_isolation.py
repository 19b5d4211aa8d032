"""Plan isolation: a plan (or a fact's plan state) whose pure step raises is answered, alone.

Issue 40: whatever raises while one plan is handled rejects that plan with
`internal_error: <type>: <message>`, drops its state and counts it in
`claimwatch_quarantined_total{feature="plans"}`; the other plans of the partition go on.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import orjson
import pytest
from claimwatch.core.policy import CompiledPolicy
from claimwatch.wire.topics import TopicNames
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.plans import edge as plans_edge
from claimwatch.worker.plans import fact_side
from claimwatch.worker.plans.agents import count_quarantined
from claimwatch.worker.plans.edge import PLAN_PREFIX, PlansEdge

from tests.support.plans import decision

NAMES = TopicNames("t.")
GOOD_FACT, BAD_FACT = "inv-1|payment_status", "inv-2|payment_status"


class OnePartition:
    """Both plan stages on one partition, over dict tables; internal records delivered FIFO."""

    def __init__(self, policy: CompiledPolicy) -> None:
        self.plans: dict[bytes, bytes] = {}
        self.facts: dict[bytes, bytes] = {}
        self.resolutions: dict[bytes, bytes] = {}
        self.edge = PlansEdge(NAMES, 1, self.plans, self.facts, self.resolutions)
        self.metrics = Metrics(policy)
        self.queue: deque[tuple[str, bytes | None, bytes]] = deque()
        self.statuses: list[dict[str, Any]] = []
        self.offset = 0

    def plan(self, plan_id: str, fact: str) -> None:
        """Publish a one-step plan reading `fact`, and deliver what follows."""
        body = {"plan_id": plan_id, "steps": [{"step_id": "s", "reads": [fact]}]}
        self.queue.append((NAMES.plans, plan_id.encode(), orjson.dumps(body)))
        self.run()

    def decide(self, fact: str, did: str, outcome: str, action: str, at: str) -> None:
        """What the claims agent does with a decision: store it, hand it to the fact side."""
        record = decision(fact, did, outcome, action, at)
        self.resolutions[fact.encode()] = orjson.dumps(record)
        self._take(self.edge.on_decided(fact.encode(), record))
        self.run()

    def run(self) -> None:
        while self.queue:
            topic, key, value = self.queue.popleft()
            self.offset += 1
            args = (topic, 0, self.offset, key, value)
            if topic == NAMES.plans_interest:
                self._take(self.edge.handle_fact_side(*args))
            else:
                self._take(self.edge.handle_plan_side(*args))

    def _take(self, handled: plans_edge.PlansHandled) -> None:
        count_quarantined(self.metrics, handled)
        for out in handled.sends:
            if out.topic == NAMES.plans_steps:
                self.statuses.append(orjson.loads(out.value))
            elif out.topic != NAMES.dlq:
                self.queue.append((out.topic, out.key, out.value))

    def latest(self) -> dict[str, tuple[str, str | None]]:
        """The latest (status, reason) of step `s` per plan."""
        return {s["plan_id"]: (s["status"], s.get("reason")) for s in self.statuses}

    def quarantined(self) -> float | None:
        return self.metrics.registry.get_sample_value(
            "claimwatch_quarantined_total", {"feature": "plans"}
        )


def raising_for_plan(name: str, step: Any, position: int) -> Any:
    """`step`, raising RuntimeError when its argument at `position` is (or names) plan `name`."""

    def poisoned(*args: Any) -> Any:
        target = args[position] if position < len(args) else None
        if getattr(target, "plan_id", target) == name:
            raise RuntimeError(f"poisoned {name}")
        return step(*args)

    return poisoned


@pytest.mark.parametrize(
    ("step", "position"),
    [("on_plan", 1), ("on_decision", 3)],
    ids=["the plan is taken in", "a fact's decision reaches the plan"],
)
def test_a_plan_whose_step_raises_is_rejected_and_the_others_go_on(
    policy: CompiledPolicy, monkeypatch: pytest.MonkeyPatch, step: str, position: int
) -> None:
    """`poison` is answered `rejected` with internal_error; `good` waits, then runs."""
    monkeypatch.setattr(
        plans_edge, step, raising_for_plan("poison", getattr(plans_edge, step), position)
    )
    part = OnePartition(policy)

    part.plan("poison", GOOD_FACT)
    part.plan("good", GOOD_FACT)

    status, reason = part.latest()["poison"]
    assert ("rejected", "internal_error: RuntimeError: poisoned poison") == (status, reason)
    assert ("waiting", None) == part.latest()["good"]
    assert 1.0 == part.quarantined()
    assert [PLAN_PREFIX + b"good"] == list(part.plans)
    part.decide(GOOD_FACT, "dec_1", "resolved", "proceed", "2026-09-14T09:00:00Z")
    assert ("runnable", None) == part.latest()["good"]
    assert "rejected" == part.latest()["poison"][0]


def test_a_fact_whose_plan_state_raises_refuses_its_readers_and_the_others_go_on(
    policy: CompiledPolicy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`on_fact_decision` raises for one fact: its plan is rejected, its state dropped."""
    real = fact_side.on_fact_decision

    def poisoned(state: Any, fact: str, view: Any) -> Any:
        if fact == BAD_FACT:
            raise RuntimeError("poisoned fact")
        return real(state, fact, view)

    monkeypatch.setattr(fact_side, "on_fact_decision", poisoned)
    part = OnePartition(policy)
    part.plan("reads-bad", BAD_FACT)
    part.plan("reads-good", GOOD_FACT)

    part.decide(BAD_FACT, "dec_b", "resolved", "proceed", "2026-09-14T09:00:00Z")
    part.decide(GOOD_FACT, "dec_g", "resolved", "proceed", "2026-09-14T09:00:00Z")

    status, reason = part.latest()["reads-bad"]
    assert ("rejected", "internal_error: RuntimeError: poisoned fact") == (status, reason)
    assert ("runnable", None) == part.latest()["reads-good"]
    assert [GOOD_FACT.encode()] == list(part.facts)
    assert 1.0 == part.quarantined()
