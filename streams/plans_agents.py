"""The plan-blocking agents: thin loops that hand records to `PlansEdge` and send its output."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import faust

from streams.agents import forget_on_rebalance, send_counted
from streams.app import Pipeline
from streams.metrics import Metrics
from streams.plans_edge import PlansEdge, PlansHandled
from streams.topics import TopicNames


def plans_edge(pipe: Pipeline) -> PlansEdge:
    """The edge over the pipeline's plan tables and its resolutions table."""
    return PlansEdge(
        pipe.names, pipe.settings.partitions, pipe.plans_table, pipe.plan_facts, pipe.resolutions
    )


#: What the claims agent calls with each decision it makes: partition, fact key, record JSON.
DecisionHook = Callable[[int, bytes, bytes], Awaitable[None]]


def install_plans(pipe: Pipeline, edge: PlansEdge, metrics: Metrics) -> DecisionHook:
    """Register the plan-side and fact-side agents and their rebalance hooks.

    The fact side learns of decisions from the claims agent, in process (the returned hook):
    the decision is made on the fact's partition, where its plan interests are kept, so
    reading it back from `decisions` would only cost the worker a second pass over every
    decision. `plans.interest` is still read by an agent.
    """
    app = pipe.app
    names: TopicNames = pipe.names

    def raw(*topics: str) -> Any:
        """A bytes topic object over one or more topic names."""
        return app.topic(
            *topics,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=pipe.settings.partitions,
        )

    # sending needs one topic per object; the agents read two topics each
    targets = {
        name: raw(name)
        for name in (names.plans, names.plans_steps, names.plans_interest, names.plans_updates)
    }
    targets[names.dlq] = pipe.dlq
    plan_side = raw(names.plans, names.plans_updates)
    fact_side = raw(names.plans_interest)

    async def send(handled: PlansHandled) -> None:
        """Send what the edge returned and count its events."""
        await send_counted(targets, handled.sends, handled.events, metrics)

    @app.agent(plan_side, concurrency=1)
    async def process_plans(stream: faust.StreamT[bytes]) -> None:
        """Plan side: `plans` and `plans.updates`, by plan id."""
        async for event in stream.events():  # plans are few: no batch, no polling
            m = event.message
            await send(edge.handle_plan_side(m.topic, m.partition, m.offset, m.key, event.value))

    @app.agent(fact_side, concurrency=1)
    async def process_plan_facts(stream: faust.StreamT[bytes]) -> None:
        """Fact side: `plans.interest`, by fact key (decisions come through the hook)."""
        async for event in stream.events():
            m = event.message
            await send(edge.handle_fact_side(m.topic, m.partition, m.offset, m.key, event.value))

    async def on_decision(partition: int, key: bytes, body: bytes) -> None:
        await send(edge.handle_fact_side(names.decisions, partition, -1, key, body))

    @pipe.plans_table.on_recover  # type: ignore[untyped-decorator]
    async def on_plans_recovered() -> None:
        """Books built before recovery finished are incomplete: rebuild them."""
        edge.forget()

    # books of moved partitions are dropped and rebuilt from the table on their next record
    forget_on_rebalance(app, names.plans, edge.forget)

    return on_decision
