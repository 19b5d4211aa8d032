"""The plan-blocking agents: thin loops that hand records to `PlansEdge` and send its output."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from claimwatch.wire.topics import TopicNames
from claimwatch.worker.agent_loop import record_agent
from claimwatch.worker.app import Pipeline, raw_topic
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.partition_state import forget_on_rebalance
from claimwatch.worker.plans.edge import PlansEdge, PlansHandled
from claimwatch.worker.sending import send_counted
from claimwatch.worker.supervision import AgentFun


def plans_edge(pipe: Pipeline) -> PlansEdge:
    """The edge over the pipeline's plan tables and its resolutions table."""
    return PlansEdge(
        pipe.names, pipe.settings.partitions, pipe.plans_table, pipe.plan_facts, pipe.resolutions
    )


#: What the claims agent calls with each decision it makes: the fact key and the record.
DecisionHook = Callable[[bytes, dict[str, Any]], Awaitable[None]]


def install_plans(
    pipe: Pipeline,
    edge: PlansEdge,
    metrics: Metrics,
    supervise: Callable[[str], Callable[[AgentFun], AgentFun]],
) -> DecisionHook:
    """Register the plan-side and fact-side agents and their rebalance hooks.

    The fact side learns of decisions from the claims agent, in process (the returned hook):
    the decision is made on the fact's partition, where its plan interests are kept, so
    reading it back from `decisions` would only cost the worker a second pass over every
    decision. `plans.interest` is still read by an agent.
    """
    app = pipe.app
    names: TopicNames = pipe.names

    def raw(*topics: str) -> Any:
        return raw_topic(app, *topics, partitions=pipe.settings.partitions)

    # sending needs one topic per object; the agents read two topics each
    targets = {
        name: raw(name)
        for name in (names.plans, names.plans_steps, names.plans_interest, names.plans_updates)
    }
    targets[names.dlq] = pipe.dlq
    plan_side = raw(names.plans, names.plans_updates)
    fact_side = raw(names.plans_interest)

    def counted(handled: PlansHandled) -> PlansHandled:
        return count_quarantined(metrics, handled)

    async def send(handled: PlansHandled) -> None:
        """Send what the edge returned and count its events."""
        await send_counted(targets, handled.sends, handled.events, metrics)

    # plan side: `plans` and `plans.updates`, by plan id (plans are few: no batches)
    record_agent(
        pipe,
        plan_side,
        "claimwatch.worker.plans.agents.process_plans",
        supervise,
        metrics,
        targets,
        lambda r: counted(edge.handle_plan_side(r.topic, r.partition, r.offset, r.key, r.value)),
        lambda _p: edge.forget(),
    )
    # fact side: `plans.interest`, by fact key (decisions come through the hook)
    record_agent(
        pipe,
        fact_side,
        "claimwatch.worker.plans.agents.process_plan_facts",
        supervise,
        metrics,
        targets,
        lambda r: counted(edge.handle_fact_side(r.topic, r.partition, r.offset, r.key, r.value)),
        lambda _p: edge.forget(),
    )

    async def on_decision(key: bytes, record: dict[str, Any]) -> None:
        handled = counted(edge.on_decided(key, record))
        if handled.sends or handled.events:  # (most decisions: no plan reads the fact)
            await send(handled)

    @pipe.plans_table.on_recover
    async def on_plans_recovered() -> None:
        """Books built before recovery finished are incomplete: rebuild them."""
        edge.forget()

    @pipe.plan_facts.on_recover
    async def on_plan_facts_recovered() -> None:
        """The list of facts some plan reads was made before recovery finished: list again."""
        edge.forget()

    # books of moved partitions are dropped and rebuilt from the table on their next record
    forget_on_rebalance(app, names.plans, edge.forget)

    return on_decision


def count_quarantined(metrics: Metrics, handled: PlansHandled) -> PlansHandled:
    """Count the plans and facts the edge quarantined (its events are counted on send)."""
    if handled.quarantined:
        metrics.quarantined.labels("plans").inc(handled.quarantined)
    return handled
