"""The plan-blocking agents: thin loops that hand records to `PlansEdge` and send its output."""

from __future__ import annotations

from typing import Any

import faust

from streams.agents import batched_events, send_counted
from streams.app import Pipeline
from streams.metrics import Metrics
from streams.plans_edge import PlansEdge, PlansHandled
from streams.topics import TopicNames


def plans_edge(pipe: Pipeline) -> PlansEdge:
    """The edge over the pipeline's plan tables and its resolutions table."""
    return PlansEdge(
        pipe.names, pipe.settings.partitions, pipe.plans_table, pipe.plan_facts, pipe.resolutions
    )


def install_plans(pipe: Pipeline, edge: PlansEdge, metrics: Metrics) -> None:
    """Register the plan-side and fact-side agents and their rebalance hooks."""
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
    batch, within = pipe.settings.batch_max, pipe.settings.batch_within_s
    plan_side = raw(names.plans, names.plans_updates)
    fact_side = raw(names.decisions, names.plans_interest)

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
        """Fact side: `decisions` and `plans.interest`, by fact key."""
        async for event in batched_events(stream, batch, within):
            m = event.message
            await send(edge.handle_fact_side(m.topic, m.partition, m.offset, m.key, event.value))

    @pipe.plans_table.on_recover  # type: ignore[untyped-decorator]
    async def on_plans_recovered() -> None:
        """Books built before recovery finished are incomplete: rebuild them."""
        edge.forget()

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def on_plans_revoked(_app: Any, revoked: Any, **_: Any) -> None:
        """Forget the books of revoked partitions."""
        edge.forget({tp.partition for tp in revoked if tp.topic == names.plans})

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def on_plans_assigned(_app: Any, assigned: Any, **_: Any) -> None:
        """Rebuild the books of assigned partitions from the table."""
        edge.forget({tp.partition for tp in assigned if tp.topic == names.plans})
