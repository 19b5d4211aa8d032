"""The documents agent and its pages: load the document, apply the request, store and answer.

Routes: ``GET /docs/{path}`` (latest version) and ``GET /docs/{path}/v/{n}`` (version n;
410 with the reason when it was dropped beyond the versions a document keeps).
A path may contain slashes and is matched literally (``{path:.+}``); the versioned route is
tried first, which is unambiguous because the store refuses paths ending in ``v/<number>``.
Any worker answers: the page is forwarded to the owner of the path's partition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claimwatch.core.docstore import Version
from claimwatch.worker.agent_loop import record_agent
from claimwatch.worker.app import Pipeline
from claimwatch.worker.docs.edge import DocsEdge, DocsHandled, Gone
from claimwatch.worker.forwarding import answer_elsewhere
from claimwatch.worker.input_record import Record
from claimwatch.worker.metrics import Metrics
from claimwatch.worker.partition_state import forget_on_rebalance
from claimwatch.worker.supervision import AgentFun


def _page(path: str, version: Version) -> dict[str, Any]:
    """The JSON of a document page."""
    return {
        "path": path,
        "version": version.number,
        "body": version.body,
        "content_hash": version.content_hash,
    }


def install_docs(
    pipe: Pipeline,
    edge: DocsEdge,
    metrics: Metrics,
    supervise: Callable[[str], Callable[[AgentFun], AgentFun]],
) -> None:
    """Register the documents agent (concurrency 1) and the /docs pages."""
    app = pipe.app
    topics = {
        pipe.names.publish: pipe.publish,
        pipe.names.publish_results: pipe.publish_results,
        pipe.names.dlq: pipe.dlq,
    }

    def handle(record: Record) -> DocsHandled:
        out = edge.handle(record.partition, record.offset, record.key, record.value or b"")
        if out.quarantined:
            metrics.quarantined.labels("documents").inc(out.quarantined)
        return out

    record_agent(
        pipe,
        pipe.publish,
        "claimwatch.worker.docs.agents.process_docs",
        supervise,
        metrics,
        topics,
        handle,
        lambda _p: edge.forget(),
    )

    async def on_docs_recovered() -> None:
        edge.forget()

    pipe.docs.on_recover(on_docs_recovered)

    forget_on_rebalance(app, pipe.names.publish, lambda _moved: edge.forget())

    async def answer(web: Any, request: Any, path: str, number: int | None) -> Any:
        # the docs table has the same partition count and key partitioner as the resolutions
        # table, so the owner of the key's resolutions partition owns its docs partition too
        elsewhere = await answer_elsewhere(pipe, path.encode(), web, request)
        if elsewhere is not None:
            return elsewhere
        found = edge.lookup(path, number)
        if isinstance(found, Gone):
            return web.json({"error": found.reason}, status=410)
        if found is None:
            what = "document" if number is None else f"version {number} of"
            return web.json({"error": f"no {what} {path}"}, status=404)
        return web.json(_page(path, found))

    @app.page("/docs/{path:.+}/v/{n:[0-9]+}")
    async def doc_version_page(web: Any, request: Any, path: str, n: str) -> Any:
        return await answer(web, request, path, int(n))

    @app.page("/docs/{path:.+}")
    async def doc_page(web: Any, request: Any, path: str) -> Any:
        return await answer(web, request, path, None)
