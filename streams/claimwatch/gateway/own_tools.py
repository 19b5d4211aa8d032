"""claimwatch's own tools on the gateway: a fact's decision, its explanation, open conflicts.

    claimwatch_decision(subject, field)   the fact's current decision (the worker's fact page)
    claimwatch_explain(subject, field)    that decision in words (`claimwatch.explain`)
    claimwatch_conflicts(field)           the facts of a field in conflict now (conflicts topic)

Each is a plain async function returning its structured answer, and an `OwnTool` (name,
description, JSON input schema, `call`) in `OWN_TOOLS` that the gateway lists and routes:
`call(settings, arguments)` answers an MCP `CallToolResult`, an error result (never an
exception) when the arguments are wrong or the worker or the broker does not answer.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from mcp.types import CallToolResult, TextContent

from claimwatch.audit.explain import explain
from claimwatch.client.decisions import TopicMissing
from claimwatch.client.facts import FactPages, WorkerUnavailable
from claimwatch.gateway.config import GatewaySettings
from claimwatch.gateway.notes import decided_note
from claimwatch.gateway.open_conflicts import open_conflicts
from claimwatch.gateway.routing import OwnTool
from claimwatch.gateway.wording import shown, text_block
from claimwatch.wire.topics import BrokerUnavailable

_TEXT: Final = {"type": "string", "minLength": 1}
_FACT_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "subject": {**_TEXT, "description": "what the fact is about, e.g. invoice:INV-2"},
        "field": {**_TEXT, "description": "the predicate, e.g. payment_status"},
    },
    "required": ["subject", "field"],
    "additionalProperties": False,
}
_FIELD_SCHEMA: Final = {
    "type": "object",
    "properties": {"field": {**_TEXT, "description": "the predicate, e.g. payment_status"}},
    "required": ["field"],
    "additionalProperties": False,
}


class ArgumentError(ValueError):
    """A tool called with arguments its schema does not allow."""


async def claimwatch_decision(
    settings: GatewaySettings, subject: str, field: str
) -> dict[str, Any]:
    """The fact's current decision as a `claimwatch` note, or `found: false` when it has none."""
    record = await _current(settings, subject, field)
    if record is None:
        return {"subject": subject, "field": field, "found": False}
    return {"found": True, **decided_note(record, None), "decided_at": record.get("decided_at")}


async def claimwatch_explain(settings: GatewaySettings, subject: str, field: str) -> dict[str, Any]:
    """The fact's current decision in words (`claimwatch.explain`), or `found: false`."""
    record = await _current(settings, subject, field)
    if record is None:
        return {"subject": subject, "field": field, "found": False}
    return {
        "subject": subject,
        "field": field,
        "found": True,
        "decision_id": record.get("decision_id"),
        "explanation": explain(record),
    }


async def claimwatch_conflicts(settings: GatewaySettings, field: str) -> dict[str, Any]:
    """The facts of `field` in conflict now, with their competing values."""
    found = await open_conflicts(settings.bootstrap, settings.topic_prefix, field)
    conflicts = [
        {
            "subject": subject,
            "decision_id": record.get("decision_id"),
            "since": record.get("at"),
            "conflict_kind": record.get("conflict_kind"),
            "competing": [
                {
                    "source": alt.get("source"),
                    "value": alt.get("value"),
                    "exists": alt.get("exists"),
                }
                for alt in record.get("competing") or []
            ],
        }
        for subject, record in sorted(found.open.items())
    ]
    return {
        "field": field,
        "conflicts": conflicts,
        "complete": found.complete,
        "records_read": found.records_read,
        "read_from": "the worker's conflicts topic, from its beginning to its end now",
    }


async def _current(settings: GatewaySettings, subject: str, field: str) -> dict[str, Any] | None:
    async with FactPages(settings.worker_url) as pages:
        answer = await pages.ask(subject, field)
    return answer.decision if answer.status == 200 else None


def _fact_text(answer: Mapping[str, Any]) -> str:
    if not answer["found"]:
        return f"no decision on {answer['subject']} {answer['field']}: no claim about it yet"
    return text_block(answer)


def _explain_text(answer: Mapping[str, Any]) -> str:
    if not answer["found"]:
        return _fact_text(answer)
    return str(answer["explanation"])


def _conflicts_text(answer: Mapping[str, Any]) -> str:
    conflicts = answer["conflicts"]
    partial = "" if answer["complete"] else " (the read stopped early: there may be more)"
    if not conflicts:
        return f"no conflict open on {answer['field']}{partial}"
    facts = "; ".join(
        f"{c['subject']} ("
        + ", ".join(
            f"{alt['source']} says {shown(alt['value']) if alt['exists'] else 'not found'}"
            for alt in c["competing"]
        )
        + ")"
        for c in conflicts
    )
    return f"{len(conflicts)} conflict(s) open on {answer['field']}{partial}: {facts}"


def _text_argument(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value:
        raise ArgumentError(f"`{name}` must be a non-empty string")
    return value


async def _call_fact(
    settings: GatewaySettings,
    arguments: Mapping[str, Any],
    tool: Callable[[GatewaySettings, str, str], Awaitable[dict[str, Any]]],
    words: Callable[[Mapping[str, Any]], str],
) -> CallToolResult:
    async def run() -> tuple[dict[str, Any], str]:
        subject = _text_argument(arguments, "subject")
        field = _text_argument(arguments, "field")
        answer = await tool(settings, subject, field)
        return answer, words(answer)

    return await _answered(run, ("subject", "field"), arguments)


def refuse_unknown(arguments: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """ArgumentError naming the arguments a tool does not take."""
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ArgumentError(f"unknown argument(s): {', '.join(unknown)}")


async def _answered(
    run: Callable[[], Awaitable[tuple[dict[str, Any], str]]],
    allowed: tuple[str, ...],
    arguments: Mapping[str, Any],
) -> CallToolResult:
    """The tool's answer as a result; its failure as an error result saying what to do."""
    try:
        refuse_unknown(arguments, allowed)
        answer, text = await run()
    except ArgumentError as exc:
        return _error(f"invalid arguments: {exc}")
    except (WorkerUnavailable, BrokerUnavailable, TopicMissing, ValueError) as exc:
        return _error(str(exc))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=answer)


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def _decision(settings: GatewaySettings, arguments: Mapping[str, Any]) -> CallToolResult:
    return await _call_fact(settings, arguments, claimwatch_decision, _fact_text)


async def _explain(settings: GatewaySettings, arguments: Mapping[str, Any]) -> CallToolResult:
    return await _call_fact(settings, arguments, claimwatch_explain, _explain_text)


async def _conflicts(settings: GatewaySettings, arguments: Mapping[str, Any]) -> CallToolResult:
    async def run() -> tuple[dict[str, Any], str]:
        answer = await claimwatch_conflicts(settings, _text_argument(arguments, "field"))
        return answer, _conflicts_text(answer)

    return await _answered(run, ("field",), arguments)


#: claimwatch's tools: name, description, input schema and what answers a call.
_SPECS: Final[
    tuple[
        tuple[
            str,
            str,
            dict[str, Any],
            Callable[[GatewaySettings, Mapping[str, Any]], Awaitable[CallToolResult]],
        ],
        ...,
    ]
] = (
    (
        "claimwatch_decision",
        "The current claimwatch decision of one fact (subject, field): its outcome (resolved, "
        "conflict, insufficient, rejected), value, action (proceed, degrade, escalate), reason "
        "and the claims it weighed. Ask before acting on a value another tool returned.",
        _FACT_SCHEMA,
        _decision,
    ),
    (
        "claimwatch_explain",
        "Why claimwatch decided what it did about one fact (subject, field), in plain words: "
        "which sources said what, which won and why, and what to do.",
        _FACT_SCHEMA,
        _explain,
    ),
    (
        "claimwatch_conflicts",
        "The facts of one field (e.g. payment_status) whose sources disagree now, with each "
        "source's value. Use it to ask whether anything about a field is in dispute.",
        _FIELD_SCHEMA,
        _conflicts,
    ),
)


def own_tools(settings: GatewaySettings) -> list[OwnTool]:
    """Claimwatch's own tools as the gateway lists and routes them, asking `settings`' worker."""
    return [
        OwnTool(name, description, schema, functools.partial(answer, settings))
        for name, description, schema, answer in _SPECS
    ]
